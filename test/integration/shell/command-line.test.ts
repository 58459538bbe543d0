// In-process: the shell subcommands on the command line: help, options, suggestions, usage errors.

import { describe, expect, it } from 'vitest';
import { captureCliOutput, runCli } from '../../helpers/captured-cli.js';
import { SHELL_COMMANDS } from '../../../src/shell/command-line.js';
import { EXIT } from '../../../src/cli/exit-codes.js';
import { buildProgram } from '../../../src/cli/program.js';

const none = () => Promise.resolve(0);

// What main writes to the process's own streams, kept from the test runner's output.
const output = captureCliOutput();

const run = runCli;

describe('the shell subcommands', () => {
  it('are listed by --help', async () => {
    expect(await run('--help')).toBe(EXIT.OK);
    for (const command of SHELL_COMMANDS) expect(output.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });

  it.each(SHELL_COMMANDS.map((command) => [command]))('%s takes every connection option, --json, and shows examples and exit codes', async (command) => {
    // Every option of the bridge is defined on the command (help lists them once, on --help).
    const { program } = buildProgram('0.0.0', [command], { bridge: none, doctor: none, shell: none, account: none });
    const defined = program.commands.find((sub) => sub.name() === command)!.options.map((option) => option.long);
    for (const option of program.options.map((root) => root.long).filter((long) => long !== '--version')) expect(defined).toContain(option);
    for (const option of [
      '--url',
      '--token-env',
      '--token-file',
      '--header',
      '--request-timeout',
      '--connect-timeout',
      '--ca-file',
      '--allow-http',
      '--log-level',
      '--log-file',
      '--demo',
      '--json',
    ])
      expect(defined).toContain(option);
    expect(await run(command, '--help')).toBe(EXIT.OK);
    for (const option of ['--url', '--demo', '--json']) expect(output.stdout).toContain(option);
    expect(output.stdout).toContain('every option of the bridge works here too');
    expect(output.stdout).toMatch(/Examples:\n {2}fenbs-mcp /);
    expect(output.stdout).toContain('130 Ctrl-C');
  });

  it('lists the demo tools, calls one, reads a resource, lists prompts and gets one', async () => {
    expect(await run('tools', '--demo', '--log-level', 'warn')).toBe(EXIT.OK);
    expect(output.stdout).toMatch(/^tasks_import +Import tasks \(arguments: count\)$/m);
    output.stdout = '';
    expect(await run('call', 'tasks_get', 'ref=T-1', '--demo', '--json')).toBe(EXIT.OK);
    expect(JSON.parse(output.stdout).structuredContent.ref).toBe('T-1');
    output.stdout = '';
    expect(await run('resources', '--demo')).toBe(EXIT.OK);
    expect(await run('read', 'demo://board', '--demo')).toBe(EXIT.OK);
    expect(await run('prompts', '--demo')).toBe(EXIT.OK);
    expect(await run('prompt', 'plan_task', '--args', '{"ref":"T-3"}', '--demo')).toBe(EXIT.OK);
    expect(output.stdout).toContain('demo://board/open');
    expect(output.stdout).toContain('T-3 [done] Ship fenbs-mcp 0.1');
  });

  it('refuses a missing required argument with exit 2', async () => {
    expect(await run('call', 'tasks_get', '--demo')).toBe(EXIT.USAGE);
    expect(output.stderr).toContain('missing required argument "ref"');
  });

  it('suggests the nearest command for a typo', async () => {
    expect(await run('tool', '--demo')).toBe(EXIT.USAGE);
    expect(output.stderr).toContain('did you mean tools?');
  });

  it('returns 2 for a bad option value and for a --log-file it cannot open', async () => {
    expect(await run('tools', '--demo', '--log-level', 'loud')).toBe(EXIT.USAGE);
    expect(await run('tools', '--demo', '--log-file', '/proc/self/no/such/dir/log')).toBe(EXIT.USAGE);
    expect(output.stderr).toContain('cannot open --log-file');
    expect(await run('call', '--demo')).toBe(EXIT.USAGE);
    expect(output.stderr).toContain("missing required argument 'tool'");
  });
});
