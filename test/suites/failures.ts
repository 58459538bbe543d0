// Shared suite: every way the remote side can fail costs one error reply with the request's id; the bridge survives and stays quiet about secrets.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BRIDGE_ERRORS, type BridgeErrorCode } from '../../src/core/errors.js';
import { sseEvent, startFaultServer, startRawServer, type FaultServer, type RawReply, type Script } from '../helpers/fault-server.js';
import { startSdkV1Server, type SdkV1Server } from '../helpers/sdk-v1-server.js';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';
import { initializedNotification, initializeRequest } from '../helpers/spawn-bridge.js';
import { MAX_CONNECTIONS } from '../../src/http/dispatcher.js';

const TOKEN = `tok-${randomUUID()}`;
const REPO = fileURLToPath(new URL('../..', import.meta.url));

function call(id: string | number, args: object = { text: 'hi' }) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: args } };
}

/** Defines the suite against bridges started by `mode`. */
export function defineFailuresSuite(mode: BridgeMode): void {
  // Cleanup of whatever a test started, newest first.
  const cleanups: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function faultServer(options: Parameters<typeof startFaultServer>[0] = {}): Promise<FaultServer> {
    const server = await startFaultServer(options);
    cleanups.push(() => server.close());
    return server;
  }

  /** A bridge that has completed initialize and sent notifications/initialized. */
  async function initializedBridge(url: string, args: string[] = [], env: Record<string, string> = { FENBS_TOKEN: TOKEN }): Promise<RunningBridge> {
    const bridge = mode.start(['--url', url, ...args], env);
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result).toBeDefined();
    bridge.send(initializedNotification);
    return bridge;
  }

  /** Sends a call that must succeed, ends stdin, and checks `failedId` got exactly one reply. */
  async function expectRecovery(bridge: RunningBridge, failedId: string): Promise<void> {
    bridge.send(call('next'));
    expect((await bridge.reply('next')).result).toEqual({ echo: call('next').params });
    bridge.end();
    await expectCleanEnd(bridge, 'input-ended');
    const messages = bridge.lines.map((line) => JSON.parse(line));
    expect(messages.filter((message) => message.id === failedId)).toHaveLength(1);
  }

  /** Sends the call that fails, then one that succeeds; returns the failure reply. */
  async function failureThenRecovery(bridge: RunningBridge): Promise<any> {
    bridge.send(call('doomed'));
    const failure = await bridge.reply('doomed');
    await expectRecovery(bridge, 'doomed');
    return failure;
  }

  interface Expected {
    bridgeCode: BridgeErrorCode;
    /** data.status; omitted when no HTTP status line arrived. */
    status?: number;
    /** What data.bodyExcerpt must contain, where the server sent a body. */
    excerpt?: string;
    hint: RegExp;
  }

  function expectBridgeError(reply: any, id: string, expected: Expected): void {
    const code = BRIDGE_ERRORS[expected.bridgeCode].rpcCode;
    expect(reply).toEqual({
      jsonrpc: '2.0',
      id,
      error: { code, message: expect.any(String), data: expect.objectContaining({ bridgeCode: expected.bridgeCode }) },
    });
    // -32020…-32099 belong to the spec (2026-07-28 basic §Error Codes): never synthesised here.
    expect(reply.error.code < -32099 || reply.error.code > -32020).toBe(true);
    const { data } = reply.error;
    if (expected.status === undefined) expect(data).not.toHaveProperty('status');
    else expect(data.status).toBe(expected.status);
    if (expected.excerpt !== undefined) expect(data.bodyExcerpt).toContain(expected.excerpt);
    expect(data.hint).toMatch(expected.hint);
  }

  const html = '<!doctype html><html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>';
  const progressOf = (id: unknown) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: id, progress: 1 } });

  const statusFailures: { title: string; reply: Script; args?: string[]; expected: Expected }[] = [
    {
      title: 'a 500 with a plain-text body',
      reply: () => ({ kind: 'status', status: 500, contentType: 'text/plain', body: 'database on fire' }),
      expected: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 500, excerpt: 'database on fire', hint: /server failed internally/ },
    },
    {
      title: 'a 502 HTML page from a gateway',
      reply: () => ({ kind: 'status', status: 502, contentType: 'text/html', body: html }),
      expected: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 502, excerpt: '502 Bad Gateway', hint: /unavailable/ },
    },
    {
      title: 'a 404 while there is no session',
      reply: () => ({ kind: 'status', status: 404, contentType: 'text/plain', body: 'Cannot POST /mcp' }),
      expected: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 404, excerpt: 'Cannot POST /mcp', hint: /check --url/ },
    },
    {
      title: 'a 500 whose JSON-RPC error has no id',
      reply: () => ({ kind: 'json', status: 500, body: { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } } }),
      expected: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 500, excerpt: 'Internal error', hint: /server failed internally/ },
    },
    {
      title: 'a 500 whose JSON-RPC error is for another id',
      reply: () => ({ kind: 'json', status: 500, body: { jsonrpc: '2.0', id: 'other', error: { code: -32603, message: 'Internal error' } } }),
      expected: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 500, excerpt: '"other"', hint: /server failed internally/ },
    },
    {
      title: 'a 401 with a bearer challenge',
      reply: () => ({
        kind: 'status',
        status: 401,
        contentType: 'application/json',
        body: '{"error":"invalid_token"}',
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
      }),
      expected: { bridgeCode: 'REMOTE_AUTH', status: 401, excerpt: 'invalid_token', hint: /token was rejected/ },
    },
    {
      title: 'an HTML page with status 200',
      reply: () => ({ kind: 'status', status: 200, contentType: 'text/html; charset=utf-8', body: '<html><body>Sign in</body></html>' }),
      expected: { bridgeCode: 'REMOTE_BAD_REPLY', status: 200, excerpt: 'Sign in', hint: /not be an MCP endpoint/ },
    },
    {
      title: 'a body labelled application/json that is not JSON',
      reply: () => ({ kind: 'status', status: 200, contentType: 'application/json', body: 'upstream timed out' }),
      expected: { bridgeCode: 'REMOTE_BAD_REPLY', status: 200, excerpt: 'upstream timed out', hint: /proxy or gateway/ },
    },
    {
      title: 'an unexpected content type',
      reply: () => ({ kind: 'status', status: 200, contentType: 'application/xml', body: '<ok/>' }),
      expected: { bridgeCode: 'REMOTE_BAD_REPLY', status: 200, excerpt: '<ok/>', hint: /MCP endpoint/ },
    },
    {
      title: 'a body cut off before its Content-Length',
      reply: (r) => ({ kind: 'cut', contentType: 'application/json', body: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"res`, declaredBytes: 400 }),
      expected: { bridgeCode: 'REMOTE_CONNECTION_LOST', status: 200, hint: /closed the connection/ },
    },
    {
      title: 'an event stream that ends without the response',
      reply: (r) => ({ kind: 'sse', steps: [sseEvent(progressOf(r.id)), ': keep-alive\n\n'] }),
      expected: { bridgeCode: 'REMOTE_STREAM_ENDED', status: 200, hint: /retry/ },
    },
    {
      title: 'a reply that misses the deadline (--request-timeout 300)',
      reply: () => ({ kind: 'stall' }),
      args: ['--request-timeout', '300'],
      expected: { bridgeCode: 'REQUEST_TIMEOUT', hint: /--request-timeout/ },
    },
  ];

  describe('a request the remote side fails', () => {
    for (const { title, reply, args = [], expected } of statusFailures) {
      it(`gets one ${expected.bridgeCode} error for ${title}, and the next request succeeds`, async () => {
        const server = await faultServer();
        server.next('tools/call', reply);
        expectBridgeError(await failureThenRecovery(await initializedBridge(server.url, args)), 'doomed', expected);
      });
    }

    it('logs a 1 MiB request id as an excerpt and its length when the server fails the request, and answers under the whole id', async () => {
      const server = await faultServer();
      server.next('tools/call', () => ({ kind: 'status', status: 500, contentType: 'text/plain', body: 'database on fire' }));
      const bridge = await initializedBridge(server.url);
      const id = `long-${'i'.repeat(1 << 20)}`;
      bridge.send(call(id));
      const reply = await bridge.reply(id);
      expect(reply.id).toBe(id);
      expect(reply.error.data.bridgeCode).toBe('REMOTE_HTTP_STATUS');
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
      const logged = bridge
        .stderr()
        .split('\n')
        .filter((line) => line.includes('long-iii'));
      expect(logged).toEqual([expect.stringContaining(`… (${id.length} characters)`)]);
      expect(logged[0]!.length).toBeLessThan(1024);
    });

    it('passes on the progress the stream carried before it ended early', async () => {
      const server = await faultServer();
      server.next('tools/call', (r) => ({ kind: 'sse', steps: [sseEvent(progressOf(r.id))] }));
      const bridge = await initializedBridge(server.url);
      bridge.send(call('doomed'));
      await bridge.reply('doomed');
      const messages = bridge.lines.map((line) => JSON.parse(line));
      expect(messages.findIndex((m) => m.method === 'notifications/progress')).toBeLessThan(messages.findIndex((m) => m.id === 'doomed'));
    });

    // A JSON-RPC error for this very id is the server's own answer to it, whatever the HTTP status.
    it.each([400, 404, 500])('forwards a %i whose body is a JSON-RPC error for this id unchanged', async (status) => {
      const server = await faultServer();
      const error = { jsonrpc: '2.0', id: 'doomed', error: { code: -32602, message: 'Unknown tool: echo', data: { status, detail: ['x'] } } };
      server.next('tools/call', () => ({ kind: 'json', status, body: error }));
      expect(await failureThenRecovery(await initializedBridge(server.url))).toEqual(error);
    });

    it('gets one REMOTE_UNREACHABLE error saying nothing is listening, and succeeds once a server is', async () => {
      const probe = createServer().listen(0, '127.0.0.1');
      await once(probe, 'listening');
      const { port } = probe.address() as AddressInfo;
      probe.close();
      await once(probe, 'close');
      const bridge = mode.start(['--url', `http://127.0.0.1:${port}/mcp`], { FENBS_TOKEN: TOKEN });
      cleanups.push(() => bridge.kill());
      bridge.send(call('doomed'));
      expectBridgeError(await bridge.reply('doomed'), 'doomed', { bridgeCode: 'REMOTE_UNREACHABLE', hint: /nothing (is )?listening/i });
      await faultServer({ port });
      await expectRecovery(bridge, 'doomed');
    });

    describe('on the wire', () => {
      const wireFailures: { title: string; reply: RawReply; expected: Expected }[] = [
        {
          title: 'a connection reset before the headers',
          reply: { kind: 'reset' },
          expected: { bridgeCode: 'REMOTE_CONNECTION_LOST', hint: /closed the connection/ },
        },
        {
          title: 'a chunked body cut off mid-chunk',
          reply: { kind: 'truncated-chunked', contentType: 'application/json', body: '{"jsonrpc":"2.0","id":"doomed","result":{"content":[' },
          expected: { bridgeCode: 'REMOTE_CONNECTION_LOST', status: 200, hint: /closed the connection/ },
        },
      ];
      for (const { title, reply, expected } of wireFailures) {
        it(`gets one ${expected.bridgeCode} error for ${title}, and the next request succeeds`, async () => {
          const raw = await startRawServer();
          cleanups.push(() => raw.close());
          raw.next('tools/call', () => reply);
          expectBridgeError(await failureThenRecovery(await initializedBridge(raw.url)), 'doomed', expected);
        });
      }
    });
  });

  describe('load and lifecycle', () => {
    it('answers 1,000 pipelined requests exactly once each when the server answers them in reverse order', async () => {
      const COUNT = 1000;
      // The bridge holds at most MAX_CONNECTIONS exchanges open at once (the rest wait in its queue),
      // so the server cannot hold all 1,000: it answers each wave of BATCH in reverse order.
      const BATCH = Math.min(100, MAX_CONNECTIONS);
      const server = await faultServer();
      let held: (() => void)[] = [];
      let received = 0;
      server.every('tools/call', (request) => ({
        kind: 'custom',
        handle: (res) => {
          received++;
          held.push(() =>
            res
              .writeHead(200, { 'content-type': 'application/json' })
              .end(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { n: request.body.params.arguments.n } })),
          );
          if (held.length < BATCH && received < COUNT) return;
          for (const answer of held.reverse()) answer();
          held = [];
        },
      }));
      const bridge = await initializedBridge(server.url);
      const ids = Array.from({ length: COUNT }, (_, n) => n);
      bridge.sendRaw(ids.map((n) => `${JSON.stringify(call(n, { n }))}\n`).join(''));
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');

      const messages = bridge.lines.map((line) => JSON.parse(line)); // throws on any line that is not JSON
      const answers = messages.filter((message) => message.id !== 'init');
      expect(answers.map((answer) => answer.id)).not.toEqual(ids); // the replies really came back out of order
      expect(answers.map((answer) => answer.id).sort((a, b) => a - b)).toEqual(ids);
      for (const answer of answers) expect(answer.result).toEqual({ n: answer.id });
    });

    it('prints both replies and exits 0 when stdin closes during a 300 ms call', async () => {
      const server: SdkV1Server = await startSdkV1Server({ mode: 'json', token: TOKEN });
      cleanups.push(() => server.close());
      const bridge = mode.start(['--url', server.url], { FENBS_TOKEN: TOKEN });
      cleanups.push(() => bridge.kill());
      bridge.sendRaw(
        [initializeRequest(1), initializedNotification, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', arguments: { ms: 300 } } }]
          .map((line) => `${JSON.stringify(line)}\n`)
          .join(''),
      );
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
      const replies = bridge.lines.map((line) => JSON.parse(line));
      expect(replies.map((reply) => reply.id)).toEqual([1, 2]);
      expect(replies[1].result.content).toEqual([{ type: 'text', text: 'waited 300 ms' }]);
    });

    // A shell pipe that closes while the call is pending, against the built bin: spawned only.
    it.runIf(mode.name === 'spawned')('prints both replies and exits 0 when a pipeline closes stdin during a 2 s call', async () => {
      const server: SdkV1Server = await startSdkV1Server({ mode: 'json', token: TOKEN });
      cleanups.push(() => server.close());
      const lines = [
        initializeRequest(1),
        initializedNotification,
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', arguments: { ms: 2000 } } },
      ];
      const quoted = lines.map((line) => `'${JSON.stringify(line)}'`).join(' ');
      const child = spawn('sh', ['-c', `printf '%s\\n' ${quoted} | "${process.execPath}" bin/fenbs-mcp.js --url ${server.url}`], {
        cwd: REPO,
        env: { PATH: process.env.PATH, FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: 'warn' },
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      const [code] = await once(child, 'exit');
      expect(code).toBe(0);
      const replies = stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(replies.map((reply) => reply.id)).toEqual([1, 2]);
      expect(replies[1].result.content).toEqual([{ type: 'text', text: 'waited 2000 ms' }]);
    });

    it(`is gone within 1 s of ${mode.name === 'spawned' ? 'SIGTERM' : 'the stop signal'} with 10 calls in flight, answering each of them`, async () => {
      const server = await faultServer({ sessionId: 'session-1' });
      server.every('tools/call', () => ({ kind: 'stall' }));
      const bridge = await initializedBridge(server.url);
      const ids = Array.from({ length: 10 }, (_, n) => `call-${n}`);
      for (const id of ids) bridge.send(call(id));
      await server.received((request) => request.rpcMethod === 'tools/call', ids.length);

      const started = performance.now();
      bridge.stop();
      await bridge.exitCode;
      expect(performance.now() - started).toBeLessThan(1000);
      const answers = bridge.lines.map((line) => JSON.parse(line)).filter((message) => ids.includes(message.id));
      expect(answers.map((answer) => answer.id).sort()).toEqual(ids);
      for (const answer of answers) expect(answer.error.code).toBe(BRIDGE_ERRORS.SHUTTING_DOWN.rpcCode);
    });
  });

  describe('credentials and the command line', () => {
    // Refusals at start-up and their exit codes and warnings come from the CLI around runBridge: spawned only.
    const cliOnly = it.runIf(mode.name === 'spawned');

    cliOnly.each(['not a url', 'ftp://example.com/mcp', 'https://user:secret@example.com/mcp'])(
      'exits 2 with one message on stderr and nothing on stdout for --url %s',
      async (url) => {
        const bridge = mode.start(['--url', url], { FENBS_TOKEN: TOKEN });
        expect(await bridge.exitCode).toBe(2);
        expect(bridge.stderr().match(/^fenbs-mcp: /gm)).toHaveLength(1);
        expect(bridge.lines).toEqual([]);
      },
    );

    cliOnly('exits 2 for -H Authorization without echoing its value', async () => {
      const bridge = mode.start(['--url', 'https://example.com/mcp', '-H', 'Authorization: Bearer cli-secret-value']);
      expect(await bridge.exitCode).toBe(2);
      expect(bridge.stderr()).toMatch(/^fenbs-mcp: -H Authorization is refused/m);
      expect(bridge.stderr()).not.toContain('cli-secret-value');
      expect(bridge.lines).toEqual([]);
    });

    it(`${mode.name === 'spawned' ? 'warns once and ' : ''}sends no Authorization header when no token is set`, async () => {
      const server = await faultServer();
      const bridge = await initializedBridge(server.url, [], {});
      bridge.send(call('c'));
      await bridge.reply('c');
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
      if (mode.name === 'spawned') {
        const warnings = bridge
          .stderr()
          .split('\n')
          .filter((line) => /no token/.test(line));
        expect(warnings).toHaveLength(1);
        expect(JSON.parse(warnings[0]!).level).toBe(40);
      }
      expect(server.requests.length).toBeGreaterThan(0);
      for (const request of server.requests) expect(request.headers).not.toHaveProperty('authorization');
    });

    it('answers a 401 that came with no token set by saying the server wants one and offers no OAuth sign-in, and where to set one', async () => {
      const server = await faultServer();
      server.next('tools/call', () => ({ kind: 'status', status: 401, contentType: 'application/json', body: '{"error":"unauthorized"}' }));
      const bridge = await initializedBridge(server.url, [], {});
      bridge.send(call('c'));
      const { error } = await bridge.reply('c');
      expect(error.message).toBe('the server wants a token for tools/call (401 Unauthorized) and offers no OAuth sign-in');
      expect(error.data).toMatchObject({ bridgeCode: 'REMOTE_AUTH', status: 401, hint: 'no token is set: set FENBS_TOKEN, --token-file or --token-command' });
      expect(JSON.stringify(error)).not.toMatch(/rejected or has expired|check OAuth/);
    });

    // --log-file is opened by the CLI; in-process the log is the test's stream, read as stderr().
    const logs = mode.name === 'spawned' ? 'stderr or the log file' : 'the log';
    it(`never writes the token to ${logs}, even at trace level, when the server repeats it everywhere`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'fenbs-e2e-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const logFile = mode.name === 'spawned' ? join(dir, 'bridge.log') : undefined;
      const server = await faultServer({ sessionId: 'session-1' });
      // A server that repeats the token wherever a bridge might log what it heard.
      server.next('tools/call', () => ({
        kind: 'status',
        status: 401,
        contentType: 'text/plain',
        body: `token ${TOKEN} rejected`,
        headers: { 'www-authenticate': `Bearer error="invalid_token", error_description="${TOKEN}"` },
      }));
      server.next('tools/call', () => ({ kind: 'status', status: 500, contentType: 'text/html', body: `<pre>Authorization: Bearer ${TOKEN}</pre>` }));
      server.next('tools/call', (r) => ({ kind: 'sse', steps: [`data: not json ${TOKEN}\n\n`, sseEvent({ jsonrpc: '2.0', id: r.id, result: {} })] }));
      server.next('notifications/cancelled', () => ({ kind: 'status', status: 400, contentType: 'text/plain', body: `bad ${TOKEN}` }));
      const bridge = await initializedBridge(server.url, ['--log-level', 'trace', ...(logFile === undefined ? [] : ['--log-file', logFile])]);
      for (const id of ['a', 'b', 'c', 'd']) {
        bridge.send(call(id));
        await bridge.reply(id);
      }
      bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'gone', reason: TOKEN } });
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');

      const log = logFile === undefined ? bridge.stderr() : await readFile(logFile, 'utf8');
      expect(log).toMatch(/"level":20/); // debug lines were written: the verbose paths ran
      expect(server.requests.some((request) => request.method === 'DELETE')).toBe(true);
      expect(server.requests.every((request) => request.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
      expect(bridge.stderr()).not.toContain(TOKEN);
      expect(log).not.toContain(TOKEN);
    });
  });
}
