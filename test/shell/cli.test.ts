// In-process: the shell subcommands on the command line: help, options, suggestions, usage errors.

import { beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli.js';
import { captureProcessOutput, runCli } from '../helpers/captured-cli.js';
import { SHELL_COMMANDS } from '../../src/shell/command-line.js';

let stdout = '';
let stderr = '';
beforeEach(() => {
  stdout = '';
  stderr = '';
});
// What main writes to the process's own streams, kept from the test runner's output.
captureProcessOutput((stream, text) => (stream === 'stdout' ? (stdout += text) : (stderr += text)));

const run = runCli;

describe('the shell subcommands', () => {
  it('are listed by --help', async () => {
    expect(await run('--help')).toBe(EXIT.OK);
    for (const command of SHELL_COMMANDS) expect(stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });

  it.each(SHELL_COMMANDS.map((command) => [command]))('%s takes every connection option, --json, and shows examples and exit codes', async (command) => {
    expect(await run(command, '--help')).toBe(EXIT.OK);
    for (const option of ['--url', '--token-env', '--token-file', '--header', '--request-timeout', '--connect-timeout', '--ca-file', '--allow-http', '--log-level', '--log-file', '--demo', '--json']) expect(stdout).toContain(option);
    expect(stdout).toMatch(/Examples:\n {2}fenbs-mcp /);
    expect(stdout).toContain('130 Ctrl-C');
  });

  it('lists the demo tools, calls one, reads a resource, lists prompts and gets one', async () => {
    expect(await run('tools', '--demo', '--log-level', 'warn')).toBe(EXIT.OK);
    expect(stdout).toMatch(/^tasks_import +Import tasks$/m);
    stdout = '';
    expect(await run('call', 'tasks_get', 'ref=T-1', '--demo', '--json')).toBe(EXIT.OK);
    expect(JSON.parse(stdout).structuredContent.ref).toBe('T-1');
    stdout = '';
    expect(await run('resources', '--demo')).toBe(EXIT.OK);
    expect(await run('read', 'demo://board', '--demo')).toBe(EXIT.OK);
    expect(await run('prompts', '--demo')).toBe(EXIT.OK);
    expect(await run('prompt', 'plan_task', '--args', '{"ref":"T-3"}', '--demo')).toBe(EXIT.OK);
    expect(stdout).toContain('demo://board/open');
    expect(stdout).toContain('T-3 [done] Ship fenbs-mcp 0.1');
  });

  it('refuses a missing required argument with exit 2', async () => {
    expect(await run('call', 'tasks_get', '--demo')).toBe(EXIT.USAGE);
    expect(stderr).toContain('missing required argument "ref"');
  });

  it('suggests the nearest command for a typo', async () => {
    expect(await run('tool', '--demo')).toBe(EXIT.USAGE);
    expect(stderr).toContain('did you mean tools?');
  });

  it('returns 2 for a bad option value and for a --log-file it cannot open', async () => {
    expect(await run('tools', '--demo', '--log-level', 'loud')).toBe(EXIT.USAGE);
    expect(await run('tools', '--demo', '--log-file', '/proc/self/no/such/dir/log')).toBe(EXIT.USAGE);
    expect(stderr).toContain('cannot open --log-file');
    expect(await run('call', '--demo')).toBe(EXIT.USAGE);
    expect(stderr).toContain("missing required argument 'tool'");
  });
});
