// In-process: messages the bridge answers or drops itself: duplicate ids, bad versions, cancels, notifications, stray server messages.

import { afterEach, describe, expect, it } from 'vitest';
import { freePort, result, sendJson, sendSse, startMcpServer, stdoutProblems, type McpServer, type Route } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
const call = (id: string | number, name = String(id), params: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, ...params },
});
const okText = (name: string) => ({ content: [{ type: 'text', text: `ok ${name}` }] });

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const serve = async (options: Parameters<typeof startMcpServer>[0] = {}): Promise<McpServer> => {
  const server = await startMcpServer(options);
  cleanups.push(() => server.close());
  return server;
};
const bridgeTo = (url: string | URL, ...args: string[]): InProcessBridge => {
  const bridge = startInProcessBridge(['--url', String(url), '--log-level', 'debug', ...args]);
  cleanups.push(() => bridge.kill());
  return bridge;
};
/** A bridge whose 2025 session is open (initialize answered, initialized accepted). */
const sessionOn = (server: McpServer, ...args: string[]): Promise<InProcessBridge> => openSession(bridgeTo(server.url, ...args), server);
const posts = (server: McpServer, method: string) => server.requests.filter((r) => r.method === 'POST' && r.message?.method === method);

describe('a request the bridge answers itself', () => {
  it('refuses a second request with an id that is still outstanding, and answers the first once', async () => {
    let release: (() => void) | undefined;
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.params?.name !== 'slow') return false;
        release = () => sendJson(res, 200, result(message.id, okText('slow')));
        return true;
      },
    });
    const bridge = bridgeTo(server.url);
    bridge.send(call(7, 'slow'));
    await server.waitForRequest((r) => r.message?.id === 7);
    bridge.send(call(7, 'again'));
    const refused = await bridge.reply(7);
    expect(refused.error).toMatchObject({ code: -32600, message: expect.stringMatching(/already used by a request that is still outstanding/) });
    release!();
    await bridge.waitFor((m) => m.id === 7 && m.result !== undefined);
    expect(server.postsFor(7)).toHaveLength(1);
    expect(bridge.lines.map((line) => JSON.parse(line)).filter((m) => m.id === 7)).toEqual([refused, { jsonrpc: '2.0', id: 7, result: okText('slow') }]);
  });

  it('refuses a 2026-07-28 request whose _meta protocol version is not a valid header value, posting nothing', async () => {
    const server = await serve();
    const bridge = bridgeTo(server.url);
    bridge.send(call('bad-version', 'x', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28\r\nX-Injected: 1' } }));
    expect((await bridge.reply('bad-version')).error).toMatchObject({ code: -32600, message: expect.stringMatching(/not a valid header value/) });
    bridge.send(call('ok'));
    expect((await bridge.reply('ok')).result).toEqual(okText('ok'));
    expect(server.requests.map((r) => r.message?.id)).toEqual(['ok']);
  });
});

describe('notifications/cancelled', () => {
  it('is not posted for a 2026-07-28 request id that is not outstanding', async () => {
    const server = await serve();
    const bridge = bridgeTo(server.url);
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'never-sent', _meta: MODERN_META } });
    bridge.send(call('ok', 'ok', { _meta: MODERN_META }));
    await bridge.reply('ok');
    expect(posts(server, 'notifications/cancelled')).toEqual([]);
  });

  it('is not posted before a 2025 session exists when its request is not outstanding', async () => {
    const server = await serve();
    const bridge = bridgeTo(server.url);
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'never-sent' } });
    bridge.send(call('ok'));
    await bridge.reply('ok');
    expect(posts(server, 'notifications/cancelled')).toEqual([]);
  });

  it('is posted within a 2025 session even for an id the bridge no longer holds: the server may still be working on it', async () => {
    const server = await serve({ sessions: true });
    const bridge = await sessionOn(server);
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'finished-earlier' } });
    const posted = await server.waitForRequest((r) => r.message?.method === 'notifications/cancelled');
    expect(posted.headers['mcp-session-id']).toBeDefined();
  });
});

describe('a notification the server does not accept', () => {
  it('is logged with the status and costs no stdout line; the next request is served', async () => {
    const server = await serve({
      route: ({ res, message }) =>
        message?.method === 'notifications/roots/list_changed' && (res.writeHead(400, { 'content-type': 'text/plain' }).end('no roots here'), true),
    });
    const bridge = bridgeTo(server.url);
    bridge.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    await waitForLog(bridge, /the server did not accept the message/);
    expect(bridge.stderr()).toMatch(/no roots here/);
    bridge.send(call('ok'));
    await bridge.reply('ok');
    expect(stdoutProblems(bridge.lines, ['ok'])).toEqual([]);
  });

  it('is logged with a hint when nothing listens, and costs no stdout line', async () => {
    const bridge = bridgeTo(`http://127.0.0.1:${await freePort()}/mcp`);
    bridge.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    await waitForLog(bridge, /nothing (is )?listening|ECONNREFUSED|refused/i);
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
    expect(bridge.lines).toEqual([]);
  });

  it('is given up at its deadline when the server never answers the post, costs no stdout line, and the next request is served', async () => {
    const server = await serve({ route: ({ message }) => message?.method === 'notifications/roots/list_changed' }); // taken, never answered
    const bridge = bridgeTo(server.url, '--request-timeout', '300');
    bridge.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    await waitForLog(bridge, /the server did not take notifications\/roots\/list_changed within 300 ms/);
    bridge.send(call('after'));
    expect((await bridge.reply('after')).result).toEqual(okText('after'));
    expect(stdoutProblems(bridge.lines, ['after'])).toEqual([]);
  });

  it('re-initializes a session the server forgot, then posts the notification again in the new session', async () => {
    const lost: { session?: unknown } = {};
    // The server lost the session (a restart): a message with the old id meets 404 (transports §Session Management).
    const server = await serve({
      sessions: true,
      route: ({ req, res, message }) =>
        req.method === 'POST' &&
        message?.method !== 'initialize' &&
        lost.session !== undefined &&
        req.headers['mcp-session-id'] === lost.session &&
        (sendJson(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }), true),
    });
    const bridge = await sessionOn(server);
    lost.session = server.requests.find((r) => r.message?.method === 'notifications/initialized')!.headers['mcp-session-id'];
    bridge.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    const reposted = await server.waitForRequest(
      (r) => r.message?.method === 'notifications/roots/list_changed' && r.headers['mcp-session-id'] !== lost.session,
    );
    const attempts = posts(server, 'notifications/roots/list_changed');
    expect(attempts.map((r) => r.headers['mcp-session-id'])).toEqual([lost.session, reposted.headers['mcp-session-id']]);
    expect(posts(server, 'initialize')).toHaveLength(2); // the client's, then the bridge's replay
    expect(bridge.lines).toHaveLength(1); // only the client's own initialize reply
  });
});

describe('a server message with nowhere to go', () => {
  /** A 2025 server with sessions whose listen stream carries `events`, then stays open. */
  async function listenServer(events: string): Promise<McpServer> {
    const route: Route = ({ req, res }) => {
      if (req.method !== 'GET') return false;
      void sendSse(res, events, { end: false });
      return true;
    };
    return serve({ route });
  }

  it('drops a response for no outstanding request, skips events that are not JSON-RPC, and writes the rest', async () => {
    const server = await listenServer(
      [
        'id: 1\ndata: {"jsonrpc":"2.0","id":"nobody-asked","result":{}}\n\n',
        'id: 2\ndata: this is not JSON\n\n',
        'id: 3\ndata: {"hello":"world"}\n\n',
        'id: 4\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"still here"}}\n\n',
      ].join(''),
    );
    const bridge = await sessionOn(server);
    const written = await bridge.waitFor((m) => m.method === 'notifications/message');
    expect(written.params.data).toBe('still here');
    await waitForLog(bridge, /response for no outstanding request/);
    expect(bridge.stderr()).toMatch(/not JSON; skipped/);
    expect(bridge.stderr()).toMatch(/not a JSON-RPC message; skipped/);
    expect(stdoutProblems(bridge.lines, [1])).toEqual([]);
    expect(bridge.lines.some((line) => line.includes('nobody-asked') || line.includes('hello'))).toBe(false);
  });

  it('settles an outstanding request with its response when it arrives on the listen stream instead', async () => {
    let listen: ((text: string) => void) | undefined;
    const server = await serve({
      route: ({ req, res, message }) => {
        if (req.method === 'GET') {
          void sendSse(res, ': open\n\n', { end: false });
          listen = (text) => void res.write(text);
          return true;
        }
        return message?.params?.name === 'answered-elsewhere'; // never answered on its own POST
      },
    });
    const bridge = await sessionOn(server);
    await server.waitForRequest((r) => r.method === 'GET');
    bridge.send(call('elsewhere', 'answered-elsewhere'));
    await server.waitForRequest((r) => r.message?.id === 'elsewhere');
    listen!(`data: ${JSON.stringify(result('elsewhere', okText('from the listen stream')))}\n\n`);
    expect(await bridge.reply('elsewhere')).toEqual({ jsonrpc: '2.0', id: 'elsewhere', result: okText('from the listen stream') });
    expect(stdoutProblems(bridge.lines, [1, 'elsewhere'])).toEqual([]);
  });
});

describe('a reply the bridge cannot use', () => {
  it('answers a body in an encoding it cannot decode with one REMOTE_BAD_REPLY naming it, and serves the next request', async () => {
    const server = await serve({
      route: ({ res, message }) =>
        message?.params?.name === 'zstd' &&
        (res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd' }).end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd])), true),
    });
    const bridge = bridgeTo(server.url);
    bridge.send(call('zstd'));
    expect((await bridge.reply('zstd')).error).toMatchObject({
      message: expect.stringMatching(/content encoding "zstd"/),
      data: { bridgeCode: 'REMOTE_BAD_REPLY', status: 200 },
    });
    bridge.send(call('ok'));
    expect((await bridge.reply('ok')).result).toEqual(okText('ok'));
    expect(stdoutProblems(bridge.lines, ['zstd', 'ok'])).toEqual([]);
  });

  it.each<[string, string | undefined, Record<string, string>, RegExp]>([
    ['insufficient_scope', 'Bearer error="insufficient_scope", scope="tasks:write"', {}, /lacks a scope/],
    ['no challenge, to a token', undefined, { FENBS_TOKEN: 'a-token-the-server-knows' }, /not allowed to do this/],
    [
      'no challenge, and no token sent',
      undefined,
      {},
      /^no token is set: set FENBS_TOKEN, --token-file or --token-command \(or the server refused the Origin\)$/,
    ],
  ])('answers a 403 with %s with REMOTE_AUTH and the matching hint', async (_, challenge, env, hint) => {
    const server = await serve({
      route: ({ res }) => (
        res.writeHead(403, { 'content-type': 'text/plain', ...(challenge === undefined ? {} : { 'www-authenticate': challenge }) }).end('forbidden'),
        true
      ),
    });
    const bridge = startInProcessBridge(['--url', String(server.url)], env);
    cleanups.push(() => bridge.kill());
    bridge.send(call('denied'));
    expect((await bridge.reply('denied')).error.data).toMatchObject({ bridgeCode: 'REMOTE_AUTH', status: 403, hint: expect.stringMatching(hint) });
  });
});

describe('a flood of lines', () => {
  it('answers 5,000 requests written in one go exactly once each, more than the bridge keeps in flight at a time', async () => {
    const COUNT = 5000;
    const server = await serve();
    const bridge = bridgeTo(server.url, '--log-level', 'warn');
    const ids = Array.from({ length: COUNT }, (_, n) => n);
    bridge.sendRaw(ids.map((n) => `${JSON.stringify(call(n, 'flood'))}\n`).join(''));
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
    expect(stdoutProblems(bridge.lines, ids)).toEqual([]);
    expect(server.requests).toHaveLength(COUNT);
  });
});
