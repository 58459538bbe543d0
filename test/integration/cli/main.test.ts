// In-process: the command line: usage errors, --help, --version, doctor, and a bridge over the process's own stdio.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { captureCliOutput, runCli } from '../../helpers/captured-cli.js';
import { freePort, startMcpServer } from '../../helpers/hardening-servers.js';
import { EXIT } from '../../../src/cli/exit-codes.js';
import { SHELL_REQUEST_TIMEOUT_MS } from '../../../src/config/config.js';
import { STILL_WAITING_MS } from '../../../src/shell/client.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

// What main writes to the process's own streams, kept from the test runner's output.
const output = captureCliOutput();

const run = runCli;

describe('fenbs-mcp --help and --version', () => {
  it('prints the options, the environment variables and examples for --help, and returns 0', async () => {
    expect(await run('--help')).toBe(EXIT.OK);
    expect(output.stdout).toMatch(/^Usage: fenbs-mcp/m);
    for (const option of ['--url', '--token-env', '--token-file', '--header', '--request-timeout', '--max-line-bytes', '--ca-file', '--log-file', '--demo'])
      expect(output.stdout).toContain(option);
    expect(output.stdout).toMatch(/FENBS_TOKEN/);
    expect(output.stdout).toMatch(/Examples:/);
    expect(output.stderr).toBe('');
  });

  it('prints the doctor help, with its exit codes, for doctor --help', async () => {
    expect(await run('doctor', '--help')).toBe(EXIT.OK);
    expect(output.stdout).toMatch(/--json/);
    expect(output.stdout).toMatch(/Exit code 0 when the bridge can work, 3 when a check failed, 2 for usage errors/);
  });

  it.each(['--version', '-v'])('prints the package version for %s and returns 0', async (flag) => {
    expect(await run(flag)).toBe(EXIT.OK);
    expect(output.stdout).toBe(`${VERSION}\n`);
  });
});

describe('a usage error', () => {
  const file = (name: string, text: string) => {
    const path = join(mkdtempSync(join(tmpdir(), 'fenbs-cli-')), name);
    writeFileSync(path, text);
    return path;
  };

  it.each([
    ['an unknown option', ['--no-such-option'], /unknown option '--no-such-option'/],
    ['an option without its value', ['--url'], /argument missing/],
    ['a request timeout that is not a number', ['--request-timeout', 'soon'], /--request-timeout expects a whole number/],
    ['a connect timeout of zero', ['--connect-timeout', '0'], /--connect-timeout must be at least 1/],
    ['a URL that does not parse', ['--url', 'not a url'], /invalid URL/],
    ['a URL that is not http(s)', ['--url', 'ftp://127.0.0.1/mcp'], /https:\/\/ or http:\/\//],
    ['a URL with credentials in it', ['--url', 'https://user:pw@127.0.0.1/mcp'], /user name or password/],
    ['http:// to another host with a token', ['--url', 'http://example.invalid/mcp', '--token-file', 'TOKEN_FILE'], /--allow-http/],
    ['an unknown log level', ['--log-level', 'loud'], /--log-level must be one of/],
    ['a malformed -H', ['-H', 'no colon here'], /-H expects "Name: value"/],
    ['a header the bridge owns', ['-H', 'Mcp-Session-Id: abc'], /the bridge sets that header itself/],
    ['a header undici refuses to send', ['-H', 'Expect: 100-continue'], /-H Expect is refused: undici does not support Expect/],
    [
      '-H naming a variable that is not set',
      ['-H', 'X-Api-Key: ${FENBS_CLI_TEST_UNSET_KEY}'],
      /-H X-Api-Key refers to \$\{FENBS_CLI_TEST_UNSET_KEY\}, but FENBS_CLI_TEST_UNSET_KEY is not set/,
    ],
    ['-H with a reference that is not a variable name', ['-H', 'X-Api-Key: ${not a name}'], /not a variable reference/],
    ['an empty --token-command', ['--token-command', '  '], /--token-command is empty/],
    ['a --token-file that does not exist', ['--token-file', '/nonexistent/fenbs-token'], /cannot read --token-file/],
    ['a --ca-file that does not exist', ['--ca-file', '/nonexistent/fenbs-ca.pem'], /cannot read --ca-file/],
    ['--demo with --url', ['--demo', '--url', 'https://127.0.0.1/mcp'], /--demo and --url cannot be combined/],
    ['doctor with a URL that does not parse', ['doctor', '--url', 'not a url'], /invalid URL/],
    ['doctor --demo with --url', ['doctor', '--demo', '--url', 'https://127.0.0.1/mcp'], /--demo and --url cannot be combined/],
  ])('returns 2 with one message and the way to --help for %s, writing nothing on stdout', async (_, args, message) => {
    const resolved = args.map((arg) => (arg === 'TOKEN_FILE' ? file('token', 'a-token-value\n') : arg));
    expect(await run(...resolved)).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: /);
    expect(output.stderr.match(/^fenbs-mcp: /gm)).toHaveLength(1);
    expect(output.stderr).toMatch(message);
    expect(output.stderr).toMatch(/fenbs-mcp --help shows every option/);
    expect(output.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(output.stdout).toBe('');
  });

  it('quotes a word of the command line with its control characters shown, not obeyed', async () => {
    expect(await run('--url', 'not a url\x1b]0;PWNED\x07\x9b2J\nforged')).toBe(EXIT.USAGE);
    expect(output.stderr).toContain('not a url\\x1b]0;PWNED\\x07\\x9b2J\\x0aforged');
    // eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
    expect(output.stderr).not.toMatch(/[\x00-\x09\x0B-\x1F\x7F-\x9F]/);
  });

  it('suggests the fix where there is one', async () => {
    expect(await run('--url', 'not a url')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^ {2}try: fenbs-mcp --url https:\/\/example\.com\/mcp$/m);
  });

  it('refuses -H Authorization without echoing its value', async () => {
    expect(await run('--url', 'https://example.com/mcp', '-H', 'Authorization: Bearer cli-secret-value')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: -H Authorization is refused/m);
    expect(output.stderr).toMatch(/FENBS_TOKEN=<token>/);
    // How to pass it instead: a reference to a variable the desktop config's "env" block sets.
    expect(output.stderr).toContain("-H 'Authorization: Bearer ${MY_TOKEN}' with MY_TOKEN set");
    expect(output.stderr).not.toContain('cli-secret-value');
  });

  it('refuses -H Authorization whose credential is written around a reference, without echoing it', async () => {
    vi.stubEnv('FENBS_CLI_TEST_PART', 'part');
    try {
      expect(await run('--url', 'https://example.com/mcp', '-H', 'Authorization: Bearer literal-prefix-${FENBS_CLI_TEST_PART}')).toBe(EXIT.USAGE);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(output.stderr).toMatch(/^fenbs-mcp: -H Authorization is refused/m);
    expect(output.stderr).not.toContain('literal-prefix');
  });

  it('refuses -H Authorization from the environment together with another credential, naming both', async () => {
    vi.stubEnv('FENBS_TOKEN', 'fenbs-token-set-too');
    vi.stubEnv('FENBS_CLI_TEST_GH', 'gh-token-value-2468');
    try {
      expect(await run('--url', 'https://example.com/mcp', '-H', 'Authorization: token ${FENBS_CLI_TEST_GH}')).toBe(EXIT.USAGE);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(output.stderr).toMatch(/-H Authorization cannot be combined with env FENBS_TOKEN: a run sends one credential/);
    expect(output.stderr).not.toContain('gh-token-value-2468');
  });

  it('returns 2 naming the --log-file it cannot open, before reading stdin', async () => {
    const notADirectory = file('plain-file', '');
    const port = await freePort();
    expect(await run('--url', `http://127.0.0.1:${port}/mcp`, '--log-file', join(notADirectory, 'bridge.log'))).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: cannot open --log-file /m);
    expect(output.stdout).toBe('');
  });
});

describe('a command line a newcomer might type', () => {
  it.each([
    ['a misspelt doctor', ['docter'], /^fenbs-mcp: unknown command "docter" \(did you mean doctor\?\)/m, 'fenbs-mcp doctor'],
    ['a word that is no command', ['bridge'], /^fenbs-mcp: unknown command "bridge"; the bridge itself takes no arguments/m, 'fenbs-mcp help'],
    [
      '--token with a value',
      ['--token', 'cli-secret-value'],
      /^fenbs-mcp: --token is not an option: a token on the command line shows up in process lists/m,
      'put it in the environment: FENBS_TOKEN=<token> fenbs-mcp',
    ],
    [
      '--token=value',
      ['--token=cli-secret-value'],
      /^fenbs-mcp: --token is not an option/m,
      'put it in the environment: FENBS_TOKEN=<token> fenbs-mcp (in a desktop config, the "env" block), or use --token-file <path>',
    ],
    [
      '--oauth-client-secret with a value',
      ['--url', 'https://example.com/mcp', '--oauth-client-secret', 'cli-secret-value'],
      /^fenbs-mcp: --oauth-client-secret is not an option: a client secret on the command line shows up in process lists/m,
      'put it in the environment: FENBS_MCP_OAUTH_CLIENT_SECRET=<secret> fenbs-mcp',
    ],
    [
      '--oauth-client-secret=value',
      ['--url', 'https://example.com/mcp', '--oauth-client-secret=cli-secret-value'],
      /^fenbs-mcp: --oauth-client-secret is not an option/m,
      'put it in the environment: FENBS_MCP_OAUTH_CLIENT_SECRET=<secret> fenbs-mcp (in a desktop config, the "env" block), or use --oauth-client-secret-file <path>',
    ],
    [
      '--oauth-client-credentials without a client secret',
      ['--url', 'https://example.com/mcp', '--oauth-client-credentials', '--oauth-client-id', 'ci'],
      /^fenbs-mcp: --oauth-client-credentials needs a confidential client: --oauth-client-id and its secret in FENBS_MCP_OAUTH_CLIENT_SECRET/m,
      'FENBS_MCP_OAUTH_CLIENT_SECRET=… fenbs-mcp --oauth-client-credentials --oauth-client-id <id>',
    ],
    [
      'both machine grants at once',
      ['--url', 'https://example.com/mcp', '--oauth-device-code', '--oauth-client-credentials'],
      /^fenbs-mcp: --oauth-device-code and --oauth-client-credentials are two ways to get a token: pick one/m,
      'fenbs-mcp --oauth-device-code (a person approves) or --oauth-client-credentials (no person)',
    ],
    [
      'a URL without its scheme',
      ['--url', 'localhost:3000/mcp'],
      /^fenbs-mcp: --url: the URL must start with https:\/\/ or http:\/\//m,
      'fenbs-mcp --url http://localhost:3000/mcp',
    ],
    [
      'an address and port without a scheme',
      ['--url', '127.0.0.1:3000'],
      /^fenbs-mcp: --url: invalid URL "127\.0\.0\.1:3000" \(no http:\/\/ or https:\/\/ in front\)/m,
      'fenbs-mcp --url http://127.0.0.1:3000/',
    ],
    ['a host name without a scheme', ['--url', 'mcp.example.com/mcp'], /invalid URL/, 'fenbs-mcp --url https://mcp.example.com/mcp'],
  ])('returns 2 for %s, saying what to type instead, never echoing a token', async (_, args, message, fix) => {
    expect(await run(...args)).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(message);
    expect(output.stderr).toContain(`  try: ${fix}`);
    expect(output.stderr).not.toContain('cli-secret-value');
    expect(output.stdout).toBe('');
  });

  it('says an unknown option and commander’s suggestion on one line, with no visible \\x0a', async () => {
    expect(await run('--dmeo')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/unknown option '--dmeo' \(Did you mean --demo\?\)/);
    expect(output.stderr).not.toContain('\\x0a');
  });

  it.each([
    [['help'], /^Usage: fenbs-mcp \[options\] \[command\]/m],
    [['help', 'doctor'], /^Usage: fenbs-mcp doctor \[options\]/m],
  ])('prints help for %j and returns 0', async (args, usageLine) => {
    expect(await run(...args)).toBe(EXIT.OK);
    expect(output.stdout).toMatch(usageLine);
  });

  it('shows a command its own options, --url and --demo, and points at --help for the other connection options', async () => {
    expect(await run('help', 'tools')).toBe(EXIT.OK);
    expect(output.stdout).toMatch(/^ {2}--url <url>/m);
    expect(output.stdout).toMatch(/^ {2}--demo /m);
    expect(output.stdout).toMatch(/^ {2}--json /m);
    expect(output.stdout).not.toMatch(/^ +(--token-file|--oauth-client-id|--max-line-bytes) /m);
    expect(output.stdout).toContain('every option of the bridge works here too');
    expect(output.stdout.split('\n').length).toBeLessThan(35);
  });

  it.each(['tools', 'resources', 'read', 'prompts', 'prompt'])('does not promise an isError exit code for `%s`, which calls no tool', async (command) => {
    expect(await run('help', command)).toBe(EXIT.OK);
    expect(output.stdout).toMatch(/^Exit codes: 0 done; 1 the server answered with an error;/m);
    expect(output.stdout).not.toContain('isError');
  });

  it('promises the isError exit code for `call`', async () => {
    expect(await run('help', 'call')).toBe(EXIT.OK);
    expect(output.stdout).toContain('1 the tool reported isError or the server answered with an error');
  });

  it('gives --help examples that work outside the clone: no unpinned npx name, the installed path of the sample session', async () => {
    expect(await run('--help')).toBe(EXIT.OK);
    expect(output.stdout).not.toMatch(/"-y", "fenbs-mcp"/);
    expect(output.stdout).not.toMatch(/< examples\//);
    expect(output.stdout).toContain('fenbs-mcp --demo < "$(npm root -g)/fenbs-mcp/examples/session.jsonl"');
  });

  it.each([
    ['a word that is no command', 'nonsense', /^fenbs-mcp: there is no command "nonsense" to show help for$/m, 'fenbs-mcp help'],
    ['a misspelt command', 'docter', /^fenbs-mcp: there is no command "docter" to show help for \(did you mean doctor\?\)$/m, 'fenbs-mcp help doctor'],
  ])('answers help for %s with one usage line and a suggestion, returns 2, and prints no help', async (_, topic, message, fix) => {
    expect(await run('help', topic)).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(message);
    expect(output.stderr).toContain(`  try: ${fix}`);
    expect(output.stderr).not.toContain('outputHelp');
    expect(output.stdout).toBe('');
  });

  it('names FENBS_MCP_URL when the URL from the environment is wrong, and takes an empty one as unset', async () => {
    vi.stubEnv('FENBS_MCP_URL', 'nope');
    expect(await run('doctor')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: FENBS_MCP_URL: invalid URL "nope"/m);
    vi.unstubAllEnvs();
  });

  it('names FENBS_MCP_LOG_LEVEL, not --log-level, when the level from the environment is wrong', async () => {
    vi.stubEnv('FENBS_MCP_LOG_LEVEL', 'bogus');
    expect(await run('--url', 'https://example.com/mcp')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: FENBS_MCP_LOG_LEVEL must be one of .*got "bogus"/m);
    vi.unstubAllEnvs();
  });
});

describe('fenbs-mcp doctor, for scripts and logs', () => {
  it('prints a JSON report for a usage error too with --json, and returns 2', async () => {
    expect(await run('doctor', '--json', '--url', 'not a url')).toBe(EXIT.USAGE);
    const lines = output.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ok: false, usage: { message: expect.stringMatching(/invalid URL/), fix: expect.any(String) }, checks: [] });
    expect(output.stderr).toMatch(/^fenbs-mcp: --url: invalid URL/m);
  });

  it.each([
    [['doctor', '--json', '--bogus'], /unknown option '--bogus'/],
    [['doctor', '--json', '--connect-timeout', 'soon'], /--connect-timeout/],
    [['doctor', '--demo', '--json', 'extra'], /^doctor takes no arguments, only options, but was given "extra"$/],
  ])('prints one JSON object on stdout for a command-line mistake with --json too (%j), and returns 2', async (args, message) => {
    expect(await run(...args)).toBe(EXIT.USAGE);
    const lines = output.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ok: false, usage: { message: expect.stringMatching(message) }, checks: [] });
    expect(output.stderr).toMatch(/^fenbs-mcp: /m);
  });

  it('writes each check and the verdict to --log-file at --log-level debug', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fenbs-doctor-log-')), 'doctor.log');
    expect(await run('doctor', '--demo', '--log-level', 'debug', '--log-file', path)).toBe(EXIT.OK);
    const entries = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; msg: string; check?: string });
    expect(entries.filter((entry) => entry.level === 20 && entry.check === 'tools').map((entry) => entry.msg)).toEqual([
      'doctor: tools/list',
      'doctor: tools passed',
    ]);
    expect(entries.at(-1)).toMatchObject({ level: 20, msg: 'doctor: every check passed' });
  });
});

describe('fenbs-mcp doctor', () => {
  it('passes every check against the demo server and returns 0', async () => {
    expect(await run('doctor', '--demo')).toBe(EXIT.OK);
    // The verdict once, as the report's last line: not again on stderr.
    expect(output.stderr).not.toMatch(/every check passed/);
    for (const check of ['url', 'tcp', 'token', 'protocol', 'tools', 'latency']) expect(output.stdout).toMatch(new RegExp(`^✓ ${check}`, 'm'));
    expect(output.stdout).toMatch(/fenbs-mcp can bridge to this server\.$/m);
  });

  it('prints the report as one JSON object with --json', async () => {
    expect(await run('doctor', '--demo', '--json')).toBe(EXIT.OK);
    const report = JSON.parse(output.stdout);
    expect(report).toMatchObject({ ok: true, revision: '2025-06-18' });
    expect(output.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('returns 3 when a check fails: nothing listening at --url', async () => {
    const port = await freePort();
    expect(await run('doctor', '--url', `http://127.0.0.1:${port}/mcp`)).toBe(EXIT.DOCTOR_FAILED);
    expect(output.stdout).toMatch(/^✗ tcp .*ECONNREFUSED/m);
    expect(output.stdout).toMatch(/cannot work with these settings yet/);
  });
});

describe('the bridge command', () => {
  const SESSION = readFileSync(new URL('../../../examples/session.jsonl', import.meta.url), 'utf8');

  /** Runs main with `lines` as the process's stdin (then EOF); stdout is captured by the spy above. */
  async function withStdin(lines: string, ...args: string[]): Promise<number> {
    const stdin = new PassThrough();
    const original = Object.getOwnPropertyDescriptor(process, 'stdin')!;
    Object.defineProperty(process, 'stdin', { value: stdin, configurable: true });
    const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'].map((signal) => [signal, process.listeners(signal as NodeJS.Signals)] as const);
    try {
      stdin.end(lines);
      return await run(...args);
    } finally {
      Object.defineProperty(process, 'stdin', original);
      // main installs its signal handlers for the life of the process; this test process lives on.
      for (const [signal, before] of signals)
        for (const listener of process.listeners(signal as NodeJS.Signals)) if (!before.includes(listener)) process.off(signal, listener);
    }
  }
  const replies = () =>
    output.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { id?: unknown; result?: unknown });

  it('answers the example session against the embedded demo server with --demo, and returns 0 at stdin EOF', async () => {
    expect(await withStdin(SESSION, '--demo', '--log-level', 'silent')).toBe(EXIT.OK);
    const answers = replies().filter((message) => message.id !== undefined);
    expect(answers.map((message) => message.id).sort()).toEqual([1, 2, 3, 4, 5, 6]); // the slow import may finish last
    expect(answers.every((message) => message.result !== undefined)).toBe(true);
  });

  it('forwards stdin to --url with the token from FENBS_TOKEN, and returns 0 at stdin EOF', async () => {
    const server = await startMcpServer();
    try {
      vi.stubEnv('FENBS_TOKEN', 'cli-bridge-token');
      expect(
        await withStdin(
          `${JSON.stringify({ jsonrpc: '2.0', id: 'q', method: 'tools/call', params: { name: 'q', arguments: {} } })}\n`,
          '--url',
          server.url.href,
          '--log-level',
          'silent',
        ),
      ).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
      await server.close();
    }
    expect(replies()).toEqual([{ jsonrpc: '2.0', id: 'q', result: { content: [{ type: 'text', text: 'ok q' }] } }]);
    expect(server.requests.map((request) => request.headers.authorization)).toEqual(['Bearer cli-bridge-token']);
  });

  /** A fresh path for --log-file, and a reader of its lines once main has returned. */
  const logFile = () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fenbs-cli-log-')), 'bridge.log');
    return {
      path,
      lines: () =>
        readFileSync(path, 'utf8')
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as { level: number; msg: string; proxy?: string }),
    };
  };

  it('logs its start to --log-file naming the proxy --url goes through by its origin alone, and warns once when no token is set', async () => {
    const log = logFile();
    vi.stubEnv('HTTPS_PROXY', 'http://proxy-user:proxy-pass-5678@127.0.0.1:9');
    try {
      expect(
        await withStdin('', '--url', 'https://127.0.0.1:9/mcp', '--token-env', 'FENBS_CLI_TEST_UNSET_TOKEN', '--log-level', 'info', '--log-file', log.path),
      ).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
    }
    const lines = log.lines();
    expect(lines.find((line) => line.msg === 'fenbs-mcp started')).toMatchObject({ proxy: 'http://127.0.0.1:9' });
    expect(lines.filter((line) => /no token/i.test(line.msg))).toEqual([
      expect.objectContaining({ level: 40, msg: expect.stringContaining('FENBS_CLI_TEST_UNSET_TOKEN') }),
    ]);
    expect(readFileSync(log.path, 'utf8')).not.toMatch(/proxy-pass-5678|proxy-user/);
    expect(output.stdout).toBe('');
  });

  it.each([
    ['a NO_PROXY entry for its host', { HTTPS_PROXY: 'http://proxy-user:proxy-pass-5678@127.0.0.1:9', NO_PROXY: '127.0.0.1' }],
    ['NO_PROXY=*', { HTTPS_PROXY: 'http://proxy-user:proxy-pass-5678@127.0.0.1:9', NO_PROXY: '*' }],
  ])('names no proxy in its start line when --url goes direct by %s, and never logs the proxy password', async (_case, variables) => {
    const log = logFile();
    for (const [name, value] of Object.entries(variables)) vi.stubEnv(name, value);
    try {
      expect(await withStdin('', '--url', 'https://127.0.0.1:9/mcp', '--log-level', 'info', '--log-file', log.path)).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
    }
    const started = log.lines().find((line) => line.msg === 'fenbs-mcp started');
    expect(started).toBeDefined();
    expect(started).not.toHaveProperty('proxy');
    expect(readFileSync(log.path, 'utf8')).not.toContain('proxy-pass-5678');
  });

  it('masks the password of every proxy the environment names, also one --url does not go through, where the server echoes it', async () => {
    const server = await startMcpServer({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/call') return false;
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: message.id,
            result: { content: [{ type: 'text', text: 'seen https-proxy-pass-2468 and http-proxy-pass-1357' }] },
          }),
        );
        return true;
      },
    });
    vi.stubEnv('HTTPS_PROXY', 'http://u:https-proxy-pass-2468@127.0.0.1:9');
    vi.stubEnv('HTTP_PROXY', 'http://u:http-proxy-pass-1357@127.0.0.1:9');
    vi.stubEnv('NO_PROXY', '127.0.0.1');
    try {
      expect(
        await withStdin(
          `${JSON.stringify({ jsonrpc: '2.0', id: 'echo', method: 'tools/call', params: { name: 'echo', arguments: {} } })}\n`,
          '--url',
          server.url.href,
          '--log-level',
          'silent',
        ),
      ).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
      await server.close();
    }
    expect(replies()).toEqual([{ jsonrpc: '2.0', id: 'echo', result: { content: [{ type: 'text', text: 'seen [REDACTED] and [REDACTED]' }] } }]);
  });

  it('warns that the token travels unencrypted with --allow-http to another host', async () => {
    const log = logFile();
    vi.stubEnv('FENBS_TOKEN', 'plain-http-token');
    try {
      expect(await withStdin('', '--url', 'http://example.invalid/mcp', '--allow-http', '--log-level', 'warn', '--log-file', log.path)).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(log.lines()).toEqual([expect.objectContaining({ level: 40, msg: expect.stringMatching(/--allow-http.*unencrypted/) })]);
  });

  it.each([
    ['a token', 'FENBS_TOKEN', [], /^the credential from env FENBS_TOKEN is shorter than 8 characters.*cannot be masked/],
    [
      'a -H value from the environment',
      'FENBS_CLI_TEST_KEY',
      ['-H', 'X-Api-Key: ${FENBS_CLI_TEST_KEY}', '--token-env', 'FENBS_CLI_TEST_UNSET_TOKEN'],
      /^the -H X-Api-Key value from \$FENBS_CLI_TEST_KEY is shorter than 8 characters.*cannot be masked/,
    ],
  ])('warns that %s shorter than MIN_MASKABLE_SECRET_CHARS cannot be masked on stdout, never showing it', async (_source, variable, args, warning) => {
    const log = logFile();
    vi.stubEnv(variable, 'zq7x9'); // 5 characters: masked in logs, too short to mask on stdout
    try {
      expect(await withStdin('', '--url', 'https://127.0.0.1:9/mcp', ...args, '--log-level', 'warn', '--log-file', log.path)).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(log.lines().filter((line) => !/^no token/.test(line.msg))).toEqual([expect.objectContaining({ level: 40, msg: expect.stringMatching(warning) })]);
    expect(readFileSync(log.path, 'utf8')).not.toContain('zq7x9');
  });

  it('masks a --token-command token and -H secrets in --log-file, on stderr and on stdout, where the server echoes them', async () => {
    const log = logFile();
    const server = await startMcpServer({
      route: ({ res, message, req }) => {
        if (message?.method !== 'tools/call') return false;
        const echoed = `${String(req.headers.authorization)} ${String(req.headers['x-api-key'])}`;
        if (message.id === 'echo')
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: echoed }] } }));
        else res.writeHead(500, { 'content-type': 'text/plain' }).end(`failed for ${echoed}`);
        return true;
      },
    });
    vi.stubEnv('FENBS_CLI_TEST_KEY', 'cli-header-secret-1357');
    const calls = ['echo', 'fail'].map((id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: id, arguments: {} } })).join('\n');
    try {
      expect(
        await withStdin(
          `${calls}\n`,
          '--url',
          server.url.href,
          '--token-command',
          'printf cli-command-token-9753',
          '-H',
          'X-Api-Key: ${FENBS_CLI_TEST_KEY}',
          '--log-level',
          'debug',
          '--log-file',
          log.path,
        ),
      ).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
      await server.close();
    }
    expect(server.requests.find((r) => r.message?.id === 'echo')!.headers).toMatchObject({
      authorization: 'Bearer cli-command-token-9753',
      'x-api-key': 'cli-header-secret-1357',
    });
    expect(replies().find((reply) => reply.id === 'echo')).toMatchObject({ result: { content: [{ text: 'Bearer [REDACTED] [REDACTED]' }] } });
    const logText = readFileSync(log.path, 'utf8');
    expect(logText).toContain('token from --token-command');
    for (const secret of ['cli-command-token-9753', 'cli-header-secret-1357']) {
      expect(output.stdout).not.toContain(secret);
      expect(output.stderr).not.toContain(secret);
      expect(logText).not.toContain(secret);
    }
  });

  it('never logs the value of a --url query parameter', async () => {
    const log = logFile();
    vi.stubEnv('HTTPS_PROXY', 'http://127.0.0.1:9'); // a proxy without a password: nothing of it to mask
    vi.stubEnv('NO_PROXY', '*');
    try {
      expect(
        await withStdin(
          '',
          '--url',
          'https://127.0.0.1:9/mcp?api_key=query-secret-4321&team=blue',
          '--token-env',
          'FENBS_CLI_TEST_UNSET_TOKEN',
          '--log-level',
          'info',
          '--log-file',
          log.path,
        ),
      ).toBe(EXIT.OK);
    } finally {
      vi.unstubAllEnvs();
    }
    const text = readFileSync(log.path, 'utf8');
    expect(text).toContain('fenbs-mcp started');
    expect(text).toContain('"url":"https://127.0.0.1:9/mcp?api_key=***&team=***"');
    expect(text).not.toContain('query-secret-4321');
  });

  it('returns 1 when reading stdin fails', async () => {
    const stdin = new PassThrough();
    const original = Object.getOwnPropertyDescriptor(process, 'stdin')!;
    Object.defineProperty(process, 'stdin', { value: stdin, configurable: true });
    const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'].map((signal) => [signal, process.listeners(signal as NodeJS.Signals)] as const);
    try {
      const exit = run('--url', 'https://127.0.0.1:9/mcp', '--log-level', 'silent');
      stdin.destroy(new Error('EIO: stdin went away'));
      expect(await exit).toBe(EXIT.FAILURE);
    } finally {
      Object.defineProperty(process, 'stdin', original);
      for (const [signal, before] of signals)
        for (const listener of process.listeners(signal as NodeJS.Signals)) if (!before.includes(listener)) process.off(signal, listener);
    }
    expect(output.stdout).toBe('');
  });

  it('returns 2 for --demo with a --log-file it cannot open, and for --demo with an invalid option', async () => {
    expect(await withStdin('', '--demo', '--log-file', '/proc/nonexistent-dir/bridge.log')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: cannot open --log-file /m);
    output.stderr = '';
    expect(await withStdin('', '--demo', '--request-timeout', 'soon')).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/--request-timeout expects a whole number/);
    expect(output.stdout).toBe('');
  });
});

describe('files named on the command line', () => {
  const file = (name: string, content: string | Buffer) => {
    const path = join(mkdtempSync(join(tmpdir(), 'fenbs-cli-file-')), name);
    writeFileSync(path, content);
    return path;
  };

  it('refuses a --token-file larger than the token limit without reading it whole', async () => {
    expect(await run('--url', 'https://127.0.0.1:9/mcp', '--token-file', file('token', 'x'.repeat(64 * 1024 + 1)))).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/--token-file .* is larger than 65536 bytes: it cannot be the right file/);
  });

  it('returns 2 for a --token-file whose token starts with "Bearer ", saying to give the token alone and never showing it', async () => {
    expect(await run('--url', 'https://127.0.0.1:9/mcp', '--token-file', file('token', 'Bearer file-token-2727\r\n'))).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/^fenbs-mcp: the token from file .* contains a space or a tab, so it cannot be sent in an Authorization header$/m);
    expect(output.stderr).toMatch(/^ {2}try: give the token alone, without "Bearer " in front/m);
    expect(output.stderr).not.toContain('file-token-2727');
  });

  it('refuses a --token-file that is empty', async () => {
    expect(await run('--url', 'https://127.0.0.1:9/mcp', '--token-file', file('token', '\n'))).toBe(EXIT.USAGE);
    expect(output.stderr).toMatch(/--token-file .* is empty/);
  });
});

describe('shell commands, for a person at a terminal and for a script', () => {
  /** A server that accepts every connection and never answers. */
  const silentServer = () =>
    startMcpServer({
      route: () => true,
    });

  it(`say they are still waiting after ${STILL_WAITING_MS / 1000} s, with the shell's ${SHELL_REQUEST_TIMEOUT_MS / 1000} s deadline and the flag that changes it, then give up at --request-timeout`, async () => {
    const server = await silentServer();
    try {
      const started = performance.now();
      expect(await run('tools', '--url', server.url.href, '--request-timeout', String(STILL_WAITING_MS + 1_500))).toBe(EXIT.DOCTOR_FAILED);
      expect(performance.now() - started).toBeLessThan(STILL_WAITING_MS + 10_000);
      expect(output.stderr).toContain(`still waiting for the server (connecting to the server, ${STILL_WAITING_MS / 1000} s so far); it gives up after`);
      expect(output.stderr).toContain('--request-timeout <ms> to change, Ctrl-C to stop');
      expect(output.stderr).toMatch(/no answer to the connection within \d+ ms/);
      expect(output.stderr).not.toMatch(/server\/discover|initialize/);
      output.stderr = '';
      // Without the flag the shell's own deadline is the one it names, not the bridge's 30 minutes.
      const waiting = run('tools', '--url', server.url.href);
      await vi.waitFor(() => expect(output.stderr).toContain('still waiting'), { timeout: STILL_WAITING_MS + 5_000, interval: 100 });
      expect(output.stderr).toContain(`it gives up after ${SHELL_REQUEST_TIMEOUT_MS / 1000} s`);
      // The server going away ends the wait.
      await server.close();
      expect(await waiting).toBe(EXIT.DOCTOR_FAILED);
    } finally {
      await server.close();
    }
  }, 30_000);

  it('print exactly one JSON object on stdout with --json for every failure: nothing listening, an unknown option, a bad --url, arguments that do not fit', async () => {
    const port = await freePort();
    const cases: [string[], number, string][] = [
      [['tools', '--json', '--url', `http://127.0.0.1:${port}/mcp`], EXIT.DOCTOR_FAILED, 'REMOTE_UNREACHABLE'],
      [['tools', '--json', '--bogus'], EXIT.USAGE, 'USAGE'],
      [['resources', '--json', '--url', 'not a url'], EXIT.USAGE, 'USAGE'],
      [['call', 'tasks_get', 'bogus=1', '--demo', '--json'], EXIT.USAGE, 'USAGE'],
      [['call', 'tasks_nope', '--demo', '--json'], EXIT.USAGE, 'USAGE'],
    ];
    for (const [args, code, errorCode] of cases) {
      output.stdout = '';
      expect(await run(...args), args.join(' ')).toBe(code);
      const lines = output.stdout.trimEnd().split('\n');
      expect(lines, args.join(' ')).toHaveLength(1);
      expect(JSON.parse(lines[0]!), args.join(' ')).toMatchObject({ ok: false, error: { code: errorCode, message: expect.any(String) } });
    }
  });

  it('say nothing was sent, and never "sent anyway", when a call has an unknown argument beside one that is missing', async () => {
    expect(await run('call', 'tasks_get', 'bogus=1', '--demo')).toBe(EXIT.USAGE);
    expect(output.stderr).toContain('tasks_get: unknown argument "bogus" (known: ref)\n');
    expect(output.stderr).toContain('nothing was sent');
    expect(output.stderr).not.toContain('sent anyway');
    output.stderr = '';
    expect(await run('call', 'tasks_get', 'ref=T-1', 'bogus=1', '--demo')).toBe(EXIT.OK);
    expect(output.stderr).toContain('tasks_get: unknown argument "bogus" (known: ref); sent anyway');
    expect(output.stderr).not.toContain('nothing was sent');
  });

  it('name what the person asked for, never the protocol method, when the server refuses the credential', async () => {
    const server = await startMcpServer({ route: ({ res }) => (res.writeHead(401, { 'content-type': 'application/json' }).end('{}'), true) });
    try {
      expect(await run('tools', '--url', server.url.href)).toBe(EXIT.DOCTOR_FAILED);
      expect(output.stderr).toContain('the server wants a token for the connection (401 Unauthorized)');
      expect(output.stderr).not.toMatch(/server\/discover|initialize/);
    } finally {
      await server.close();
    }
  });
});
