// The automatic fallback and the HTTP+SSE transport against hostile loopback servers: when it must not fall back, endpoints it must refuse, streams that misbehave.

import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { result, sendJson, startMcpServer, type McpServer, type Route } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serverWith(route: Route): Promise<McpServer> {
  const server = await startMcpServer({ route });
  cleanups.push(() => server.close());
  return server;
}

function bridgeFor(server: McpServer, ...args: string[]): InProcessBridge {
  const bridge = startInProcessBridge(['--url', server.url.href, ...args], { FENBS_TOKEN: 'tok-hostile' });
  cleanups.push(() => bridge.kill());
  return bridge;
}

const call = (id: number, name = 'echo') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const gets = (server: McpServer) => server.requests.filter((r) => r.method === 'GET');

/** Opens the event stream with `head` written at once; the response is kept open unless `end`. */
function openStream(res: ServerResponse, head: string, end = false): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(head);
  if (end) res.end();
}

/**
 * A 2024-11-05 server: a POST to /mcp is 405 (plain text), GET /mcp streams `head` (the endpoint
 * event), and a POST to /messages is answered by `onMessage` (202 and a response on the stream by default).
 */
function legacyServer(
  head: string,
  onMessage: (message: any, stream: ServerResponse | undefined, res: ServerResponse) => void = (message, stream, res) => {
    res.writeHead(202).end('Accepted');
    if (message?.id !== undefined && message.method !== undefined) stream?.write(`event: message\ndata: ${JSON.stringify(answer(message))}\n\n`);
  },
  endStream = false,
): Promise<McpServer> {
  let stream: ServerResponse | undefined;
  return serverWith(({ req, res, message }) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/mcp') {
      stream = res;
      openStream(res, head, endStream);
      return true;
    }
    if (req.method === 'POST' && path === '/messages') {
      onMessage(message, stream, res);
      return true;
    }
    res.writeHead(405, { 'content-type': 'text/plain' }).end('Method Not Allowed');
    return true;
  });
}

function answer(message: any): unknown {
  if (message.method === 'initialize') {
    return result(message.id, { protocolVersion: '2024-11-05', capabilities: {}, serverInfo: { name: 'legacy', version: '1' } });
  }
  return result(message.id, { content: [{ type: 'text', text: `ok ${message.params?.name ?? message.method}` }] });
}

const ENDPOINT = 'event: endpoint\ndata: /messages?sessionId=abc\n\n';

describe('the automatic fallback to HTTP+SSE', () => {
  it('does not fall back when the first POST is refused with 401', async () => {
    const server = await serverWith(({ req, res }) => {
      if (req.method === 'POST') sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' });
      else openStream(res, ENDPOINT);
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    expect((await bridge.reply(1)).error.data.bridgeCode).toBe('REMOTE_AUTH');
    expect(gets(server)).toEqual([]);
  });

  it('does not fall back when a 404 carries a JSON-RPC error body', async () => {
    const server = await serverWith(({ req, res }) => {
      if (req.method === 'POST') sendJson(res, 404, { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: null });
      else openStream(res, ENDPOINT);
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 404 });
    expect(gets(server)).toEqual([]);
  });

  it('does not fall back with --transport streamable-http, and names an /sse URL for what it is', async () => {
    const server = await serverWith(({ req, res }) => {
      if (req.method === 'POST') res.writeHead(405, { 'content-type': 'text/plain' }).end('Method Not Allowed');
      else openStream(res, ENDPOINT);
      return true;
    });
    const bridge = startInProcessBridge(['--url', new URL('/sse', server.url).href, '--transport', 'streamable-http']);
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 405 });
    expect(reply.error.data.hint).toMatch(/HTTP\+SSE \(2024-11-05\) URL.*--transport sse/);
    expect(gets(server)).toEqual([]);
  });

  it('refuses an endpoint on another origin and never contacts it', async () => {
    const elsewhere = await serverWith(({ res }) => {
      res.writeHead(202).end();
      return true;
    });
    const server = await legacyServer(`event: endpoint\ndata: http://127.0.0.1:${elsewhere.port}/messages?sessionId=abc\n\n`);
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data.bridgeCode).toBe('REMOTE_BAD_REPLY');
    expect(reply.error.message).toMatch(/another origin \(http:\/\/127\.0\.0\.1:\d+\).*nothing was sent there/);
    expect(elsewhere.connections).toBe(0);
    expect(elsewhere.requests).toEqual([]);
  });

  it('reports the POST error, not the GET one, when the URL offers no event stream either', async () => {
    const server = await serverWith(({ req, res }) => {
      if (req.method === 'POST') res.writeHead(405, { 'content-type': 'text/plain' }).end('Method Not Allowed');
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('no GET here');
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 405 });
    expect(gets(server)).toHaveLength(1);
  });

  it('reports the POST error when the stream never names an endpoint within the connect timeout', async () => {
    const server = await legacyServer(': keep-alive\n\n');
    const bridge = bridgeFor(server, '--connect-timeout', '300');
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 405 });
  });

  it('reports the POST error when the stream sends a message before any endpoint', async () => {
    const server = await legacyServer(
      `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: {} })}\n\n${ENDPOINT}`,
    );
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 405 });
    expect(bridge.lines.filter((line) => line.includes('notifications/message'))).toEqual([]);
  });

  it('holds messages read while the first request decides, and sends them in order on the transport chosen', async () => {
    const server = await legacyServer(ENDPOINT);
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    bridge.send(call(2, 'first'));
    bridge.send(call(3, 'second'));
    expect((await bridge.reply(1)).result.serverInfo.name).toBe('legacy');
    expect((await bridge.reply(2)).result.content[0].text).toBe('ok first');
    expect((await bridge.reply(3)).result.content[0].text).toBe('ok second');
    const messages = server.requests.filter((r) => r.method === 'POST').map((r) => r.message?.method);
    // The initialize refused at the URL given, then posted to the endpoint; nothing else before it.
    expect(messages.slice(0, 2)).toEqual(['initialize', 'initialize']);
    expect(messages.slice(2).sort()).toEqual(['notifications/initialized', 'tools/call', 'tools/call']);
  });
});

describe('the HTTP+SSE transport with --transport sse', () => {
  it('waits for the endpoint no longer than the connect timeout', async () => {
    const server = await legacyServer(': keep-alive\n\n');
    const bridge = bridgeFor(server, '--transport', 'sse', '--connect-timeout', '300');
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data.bridgeCode).toBe('REMOTE_BAD_REPLY');
    expect(reply.error.message).toContain('named no endpoint within 300 ms');
  });

  it('gives up an endpoint event longer than its limit before holding more of it', async () => {
    const server = await legacyServer(`event: endpoint\ndata: /messages?x=${'a'.repeat(200_000)}`);
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data.bridgeCode).toBe('REPLY_TOO_LARGE');
    expect(reply.error.message).toContain('larger than 8192 bytes');
    expect(server.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it.each([
    ['a javascript: URL', 'javascript:alert(1)', /names a javascript: URL/],
    ['a file: URL', 'file:///etc/passwd', /names a file: URL/],
    ['a user name and password', 'http://user:secret@127.0.0.1:1/messages', /user name or password/],
    ['no URL at all', '', /does not name a URL/],
  ])('refuses an endpoint that is %s and sends nothing', async (_what, data, message) => {
    const server = await legacyServer(`event: endpoint\ndata: ${data}\n\n`);
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data.bridgeCode).toBe('REMOTE_BAD_REPLY');
    expect(reply.error.message).toMatch(message);
    expect(server.requests.filter((r) => r.method === 'POST')).toEqual([]);
    expect(bridge.stderr()).not.toContain('secret');
  });

  it('tries the stream again for a later request when the first GET failed, once per request', async () => {
    let up = false;
    let stream: ServerResponse | undefined;
    const server = await serverWith(({ req, res, message }) => {
      if (req.method === 'GET') {
        if (!up) {
          res.writeHead(503, { 'content-type': 'text/plain' }).end('starting');
          return true;
        }
        stream = res;
        openStream(res, ENDPOINT);
        return true;
      }
      res.writeHead(202).end();
      if (message?.id !== undefined) stream?.write(`event: message\ndata: ${JSON.stringify(answer(message))}\n\n`);
      return true;
    });
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    expect((await bridge.reply(1)).error.message).toMatch(/the GET of the event stream was answered 503/);
    up = true;
    bridge.send(initializeRequest(2));
    expect((await bridge.reply(2)).result.serverInfo.name).toBe('legacy');
    expect(gets(server)).toHaveLength(2);
  });

  it('refuses a stream whose first event is a message, not the endpoint', async () => {
    const server = await legacyServer(`event: message\ndata: {"jsonrpc":"2.0","method":"x"}\n\n${ENDPOINT}`);
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    expect((await bridge.reply(1)).error.message).toContain('did not start with an endpoint event');
  });

  it('answers SESSION_LOST when the endpoint says 404 (the session is gone)', async () => {
    const server = await legacyServer(ENDPOINT, (_message, _stream, res) => void res.writeHead(404, { 'content-type': 'text/plain' }).end('Session not found'));
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'SESSION_LOST', status: 404 });
  });

  it('answers with the status when the endpoint fails with 500', async () => {
    const server = await legacyServer(ENDPOINT, (_message, _stream, res) => void res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'));
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    const reply = await bridge.reply(1);
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 500 });
  });

  it('answers every request once with an error when the stream ends right after the endpoint', async () => {
    const server = await legacyServer(ENDPOINT, (_message, _stream, res) => void res.writeHead(202).end(), true);
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    bridge.send(call(2));
    expect((await bridge.reply(1)).error.data.bridgeCode).toBe('REMOTE_STREAM_ENDED');
    expect((await bridge.reply(2)).error.data.bridgeCode).toBe('REMOTE_STREAM_ENDED');
    bridge.end();
    expect(await bridge.exited).toEqual({ exit: 'input-ended' });
    expect(bridge.lines).toHaveLength(2);
  });

  it('writes one reply when the stream repeats a response, and drops a response for an id nobody asked', async () => {
    const server = await legacyServer(ENDPOINT, (message, stream, res) => {
      res.writeHead(202).end();
      if (message?.id === undefined) return;
      const line = `event: message\ndata: ${JSON.stringify(answer(message))}\n\n`;
      stream?.write(`${line}${line}event: message\ndata: ${JSON.stringify(result(999, {}))}\n\n`);
    });
    const bridge = bridgeFor(server, '--transport', 'sse');
    bridge.send(initializeRequest(1));
    await bridge.reply(1);
    bridge.send(call(2));
    await bridge.reply(2);
    bridge.send(call(3));
    await bridge.reply(3);
    bridge.end();
    await bridge.exited;
    const ids = bridge.lines.map((line) => JSON.parse(line).id);
    expect(ids).toEqual([1, 2, 3]);
    expect(bridge.stderr()).toContain('a response for no outstanding request');
  });
});

describe('--transport auto while the first initialize decides', () => {
  it('never sends a request the client cancelled while it waited behind the initialize', async () => {
    let answerInitialize: () => void = () => undefined;
    const server = await serverWith(({ message, res }) => {
      if (message?.method !== 'initialize') return false;
      answerInitialize = () =>
        sendJson(res, 200, result(message.id, { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } }));
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest(1));
    await server.waitForRequest((r) => r.message?.method === 'initialize');
    bridge.send(call(2));
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
    bridge.send(call(3));
    answerInitialize();
    expect((await bridge.reply(1)).result.protocolVersion).toBe('2025-06-18');
    expect((await bridge.reply(3)).result).toBeDefined();
    await server.waitForRequest((r) => r.message?.method === 'notifications/cancelled');
    // Held, then cancelled: the server never hears of request 2, and the client gets no answer for it.
    expect(server.requests.filter((r) => r.message?.id === 2)).toEqual([]);
    expect(bridge.lines.map((line) => JSON.parse(line).id)).toEqual([1, 3]);
  });
});
