// The edges of a run: stderr nobody reads, a log file that fails, start-up values that cannot work, secrets in messages.

import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { MAX_LOGGED_ID_CHARS } from '../../src/core/json-rpc.js';
import { result, sendJson, serversForFile, stdoutProblems } from '../helpers/hardening-servers.js';
import { BIN, collectLines, initializeRequest, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const exec = promisify(execFile);
const call = (id: string | number, name = 'echo') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

const { serve, track } = serversForFile();
const bridge = (args: string[], env: Record<string, string> = {}): BridgeProcess => {
  const spawned = spawnBridge(args, env);
  track(() => spawned.kill());
  return spawned;
};
const tempDir = () => mkdtempSync(join(tmpdir(), 'fenbs-edges-'));

/** Starts a bridge that must refuse to start; resolves with its exit code and stderr. */
async function refused(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; stdout: string[] }> {
  const spawned = bridge(args, env);
  spawned.end();
  const timer = setTimeout(() => spawned.kill(), 8_000);
  const { code } = await spawned.exited;
  clearTimeout(timer);
  return { code, stderr: spawned.stderr(), stdout: spawned.lines };
}

describe('a client that never reads stderr', () => {
  it('answers 10,000 requests logged at trace, says how many log lines it dropped once read, and exits 0 at EOF', async () => {
    const server = await serve();
    const child = spawn(process.execPath, [BIN, '--url', server.url.href, '--log-level', 'trace'], {
      env: { PATH: process.env.PATH, FENBS_TOKEN: 'stderr-stall-token' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    track(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
    child.stdin.on('error', () => undefined); // the bridge may be gone when cleanup runs
    child.stderr.pause(); // nobody reads it: the 64 KB pipe fills and stays full
    const lines = collectLines(child.stdout, () => '(stderr not read)');
    const exited = once(child, 'exit');
    // A log line per request, ids excerpted to at most MAX_LOGGED_ID_CHARS: 10,000 requests log
    // well past the bridge's log buffer (MAX_LOG_BUFFER_BYTES) behind the full pipe.
    const ids = Array.from({ length: 10_000 }, (_, i) => `r${i}-${'x'.repeat(MAX_LOGGED_ID_CHARS)}`);
    child.stdin.write(`${JSON.stringify(initializeRequest('init'))}\n`);
    for (const id of ids) child.stdin.write(`${JSON.stringify(call(id))}\n`);
    // Counted, not awaited id by id: each reply() scans the lines from the start, 10,000 times over.
    await vi.waitFor(() => expect(lines.lines.length).toBeGreaterThanOrEqual(ids.length + 1), { timeout: 60_000, interval: 50 });
    expect(stdoutProblems(lines.lines, ['init', ...ids])).toEqual([]);

    // Reading again: the bridge says how much it had to drop.
    let stderr = '';
    child.stderr.setEncoding('utf8');
    const noticed = new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: string) => {
        stderr += chunk;
        if (/log lines? dropped/.test(stderr)) resolve();
      });
    });
    child.stderr.resume();
    child.stdin.write(`${JSON.stringify(call('after'))}\n`); // one more write after the reader is back
    await lines.reply('after', 10_000);
    await noticed;
    expect(stderr).toMatch(/"dropped":\d+/);
    child.stdin.end();
    const [code] = await exited;
    expect(code).toBe(0);
  }, 90_000);
});

describe('--log-file', () => {
  it('warns once and goes on when the file cannot be written (/dev/full: ENOSPC), answering all 300 requests', async () => {
    const server = await serve();
    const spawned = bridge(['--url', server.url.href, '--log-level', 'debug', '--log-file', '/dev/full']);
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    spawned.send(initializeRequest('init'));
    for (const id of ids) spawned.send(call(id));
    for (const id of ids) await spawned.reply(id, 20_000);
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
    expect(stdoutProblems(spawned.lines, ['init', ...ids])).toEqual([]);
    expect(spawned.stderr().match(/cannot write --log-file/g)).toHaveLength(1);
    expect(spawned.stderr()).toMatch(/ENOSPC/);
  }, 60_000);

  it('refuses a path that cannot be created (/proc/nope/x.log) with exit 2, promptly', async () => {
    const started = performance.now();
    const { code, stderr, stdout } = await refused(['--url', 'http://127.0.0.1:9/mcp', '--log-file', '/proc/nope/x.log']);
    expect(code).toBe(2);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(stderr).toMatch(/cannot open --log-file \/proc\/nope\/x\.log/);
    expect(stdout).toEqual([]);
  });

  it('refuses a --log-file whose folder does not exist with exit 2, naming the folder, and creates nothing', async () => {
    const top = join(tempDir(), 'a');
    const file = join(top, 'b', 'bridge.log');
    const { code, stderr, stdout } = await refused(['--url', 'http://127.0.0.1:9/mcp', '--log-file', file]);
    expect(code).toBe(2);
    expect(stderr).toContain(`cannot open --log-file ${file}: the folder ${join(top, 'b')} does not exist; create it first (mkdir -p ${join(top, 'b')})`);
    expect(stdout).toEqual([]);
    expect(existsSync(top)).toBe(false);
  });
});

describe('doctor never prints the token', () => {
  const token = `doctor-secret-${randomBytes(8).toString('hex')}`;
  const secret = token.slice('doctor-secret-'.length);
  const doctor = (args: string[]) =>
    exec(process.execPath, [BIN, 'doctor', ...args], { env: { PATH: process.env.PATH ?? '', FENBS_TOKEN: token } }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );

  it('masks a token the server echoes in serverInfo and in an error body, in text and --json', async () => {
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method === 'initialize') {
          sendJson(res, 200, result(message.id, { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: `echo ${token}`, version: token } }));
          return true;
        }
        if (message?.method === 'tools/list') {
          sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32603, message: `bad token ${token}` } });
          return true;
        }
        return false;
      },
    });
    for (const json of [[], ['--json']]) {
      const { code, stdout } = await doctor(['--url', server.url.href, ...json]);
      expect(code).toBe(3);
      expect(stdout).toMatch(/REDACTED/);
      expect(stdout).not.toContain(secret);
    }
  });

  it('masks a token the server echoes in WWW-Authenticate, in text and --json', async () => {
    const server = await serve({
      route: ({ res }) => {
        sendJson(res, 401, { error: token }, { 'www-authenticate': `Bearer error="invalid_token", error_description="${token} expired"` });
        return true;
      },
    });
    for (const json of [[], ['--json']]) {
      const { code, stdout } = await doctor(['--url', server.url.href, ...json]);
      expect(code).toBe(3);
      expect(stdout).toMatch(/WWW-Authenticate/);
      expect(stdout).not.toContain(secret);
    }
  });

  it('masks the query values of --url in its report', async () => {
    const server = await serve();
    const { code, stdout } = await doctor(['--url', `${server.url.href}?api_key=k3y-${secret}`, '--json']);
    expect(code).toBe(0);
    expect(stdout).not.toContain(secret);
    expect(JSON.parse(stdout).url).toMatch(/api_key=\*\*\*/);
  });
});

describe('credentials in start-up messages', () => {
  it('logs the start line with the query values of --url masked', async () => {
    const server = await serve();
    const spawned = bridge(['--url', `${server.url.href}?api_key=k3y-value-98765&team=x`], { FENBS_MCP_LOG_LEVEL: 'info' });
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
    expect(spawned.stderr()).toMatch(/fenbs-mcp started/);
    expect(spawned.stderr()).toContain('api_key=***');
    expect(spawned.stderr()).not.toContain('k3y-value-98765');
  });

  it('expands ~/ in path options as a shell would, since desktop hosts start it without one', async () => {
    const home = mkdtempSync(join(tmpdir(), 'fenbs-home-'));
    writeFileSync(join(home, 'tok.txt'), 'tilde-token-0123456789\n');
    const server = await serve();
    const spawned = bridge(['--url', server.url.href, '--token-file', '~/tok.txt', '--log-file', '~/fenbs-mcp.log', '--log-level', 'info'], { HOME: home });
    spawned.send(initializeRequest('init'));
    expect((await spawned.reply('init')).result).toBeDefined();
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer tilde-token-0123456789');
    expect(existsSync(join(home, 'fenbs-mcp.log'))).toBe(true);
    expect(existsSync('~')).toBe(false);
  });

  it("says the demo runs with the demo server's own token, naming no variable a newcomer never set", async () => {
    const spawned = bridge(['--demo'], { FENBS_MCP_LOG_LEVEL: 'info' });
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
    expect(spawned.stderr()).toMatch(/"credentials":"the embedded demo server's own token"/);
    expect(spawned.stderr()).not.toContain('FENBS_MCP_DEMO_TOKEN');
  });

  it('masks an api_key from the --url query that the server echoes in an error body, in the log and on stdout', async () => {
    const key = `k3y-${randomBytes(8).toString('hex')}`;
    const server = await serve({
      route: ({ req, res }) => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`no such key: ${req.url ?? ''}`);
        return true;
      },
    });
    const spawned = bridge(['--url', `${server.url.href}?api_key=${key}`, '--log-level', 'debug']);
    spawned.send(call('k'));
    await spawned.reply('k');
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
    expect(server.requests[0]!.body).not.toBe(''); // the request went out, with the key in its URL
    expect(`${spawned.stderr()}${spawned.lines.join('\n')}`).toMatch(/no such key/);
    expect(spawned.stderr()).not.toContain(key);
    expect(spawned.lines.join('\n')).not.toContain(key);
  });

  it('does not echo the password of an unparseable URL', async () => {
    const { code, stderr } = await refused(['--url', 'https://user:pa55-word-42@exa mple.com/mcp']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/invalid URL/);
    expect(stderr).not.toContain('pa55-word-42');
  });

  it('does not echo a -H without a colon ("Authorization Bearer X")', async () => {
    const { code, stderr } = await refused(['--url', 'https://example.invalid/mcp', '-H', 'Authorization Bearer sekrit-value-77']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/Name: value/);
    expect(stderr).not.toContain('sekrit-value-77');
  });
});

describe('values no request could carry are refused at start (exit 2)', () => {
  it.each([
    ['a -H value outside Latin-1', ['-H', 'X-Team: caf€'], {}, /-H X-Team: the value contains a character outside Latin-1/],
    ['a token with a control character', [], { FENBS_TOKEN: 'tok\u0007en-1234' }, /token from env FENBS_TOKEN contains a control character/],
    ['a token outside Latin-1', [], { FENBS_TOKEN: 'tok€en-1234' }, /token from env FENBS_TOKEN contains a character outside Latin-1/],
  ])('%s', async (_title, args, env, message) => {
    const { code, stderr, stdout } = await refused(['--url', 'http://127.0.0.1:9/mcp', ...(args as string[])], env);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).not.toContain('en-1234');
    expect(stdout).toEqual([]);
  });

  it('a --ca-file whose certificate block is garbage', async () => {
    const file = join(tempDir(), 'ca.pem');
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGUgYXQgYWxs\n-----END CERTIFICATE-----\n');
    const { code, stderr } = await refused(['--url', 'https://127.0.0.1:9/mcp', '--ca-file', file]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/holds no usable certificate/);
  });

  it.each(['--request-timeout', '--stream-idle-timeout', '--connect-timeout'])(
    '%s of 2^31 ms, naming the maximum, with no TimeoutOverflowWarning',
    async (option) => {
      const { code, stderr } = await refused(['--url', 'http://127.0.0.1:9/mcp', option, String(2 ** 31)]);
      expect(code).toBe(2);
      expect(stderr).toContain('2147483647');
      expect(stderr).not.toMatch(/TimeoutOverflowWarning/);
    },
  );

  it('an empty --token-file', async () => {
    const file = join(tempDir(), 'token');
    writeFileSync(file, '\n');
    const { code, stderr } = await refused(['--url', 'http://127.0.0.1:9/mcp', '--token-file', file]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--token-file .* is empty/);
  });

  it('a --token-file larger than 64 KiB, without reading it whole', async () => {
    const file = join(tempDir(), 'token');
    writeFileSync(file, 'x'.repeat(1024 * 1024));
    const { code, stderr } = await refused(['--url', 'http://127.0.0.1:9/mcp', '--token-file', file]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/larger than 65536 bytes/);
  });
});

describe('token masking on stdout', () => {
  it('masks a token the server echoes raw or \\/-escaped, and never touches the id', async () => {
    const token = `tok/${randomBytes(12).toString('hex')}`;
    const secret = token.slice(4);
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/call') return false;
        // PHP-style JSON: "/" escaped as "\/".
        const escaped = JSON.stringify(token).slice(1, -1).replaceAll('/', '\\/');
        const body = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"type":"text","text":"raw ${token} escaped ${escaped}"}]}}`;
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
        return true;
      },
    });
    const spawned = bridge(['--url', server.url.href], { FENBS_TOKEN: token });
    const id = `call-${token}`;
    spawned.send(call(id));
    const reply = await spawned.reply(id);
    expect(reply.result.content[0].text).toBe('raw [REDACTED] escaped [REDACTED]');
    expect(spawned.lines.join('\n').replaceAll(JSON.stringify(id).slice(1, -1), '')).not.toContain(secret);
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
  });

  it('leaves ids and tool names alone when the token is too short to mask, and warns at start', async () => {
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/list') return false;
        sendJson(res, 200, result(message.id, { tools: [{ name: 'test-tool', description: 'a test', inputSchema: { type: 'object' } }] }));
        return true;
      },
    });
    const spawned = bridge(['--url', server.url.href], { FENBS_TOKEN: 'test' });
    spawned.send(initializeRequest('latest-test-1'));
    expect((await spawned.reply('latest-test-1')).id).toBe('latest-test-1');
    spawned.send({ jsonrpc: '2.0', id: 'latest-test-2', method: 'tools/list', params: {} });
    expect((await spawned.reply('latest-test-2')).result.tools[0].name).toBe('test-tool');
    spawned.end();
    expect((await spawned.exited).code).toBe(0);
    expect(spawned.stderr()).toMatch(/shorter than 8 characters/);
  });
});
