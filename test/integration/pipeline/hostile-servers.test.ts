// The core pipeline in-process against hostile loopback servers: deadlines kept, no loops, sessions released, bad replies refused.

import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { openGzipEventStream } from '../../helpers/body-fault-servers.js';
import { result, sendJson, sseEvent, startMcpServer, type McpServer, type Route, type RouteContext } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializedNotification, initializeRequest } from '../../helpers/spawn-bridge.js';

const call = (id: string, name = id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const okText = (name: string) => ({ content: [{ type: 'text', text: `ok ${name}` }] });
const toolName = ({ message }: RouteContext): string => (typeof message?.params?.name === 'string' ? message.params.name : '');
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const listen = (id: string) => ({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: ENVELOPE } });

/** How long a loop is watched: a bridge that backs off sends a handful of requests in this time, a busy loop thousands. */
const OBSERVATION_MS = 3_000;
/** The --request-timeout of the deadline tests. */
const DEADLINE_MS = 1_500;
/** How late a deadline reply may be (timer and event-loop slack on two shared cores). */
const DEADLINE_SLACK_MS = 1_500;

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
  const bridge = startInProcessBridge(['--url', server.url.href, ...args]);
  cleanups.push(() => bridge.kill());
  return bridge;
}

/** Opens a 200 event stream and writes `text`, leaving the stream open. */
function openSse(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(text);
}

const requestsWhere = (server: McpServer, predicate: (r: McpServer['requests'][number]) => boolean) => server.requests.filter(predicate).length;

describe('deadlines the bridge keeps itself', () => {
  it('answers REQUEST_TIMEOUT at the deadline for a request waiting for a connection while all 128 are held by open streams', async () => {
    const server = await serverWith((context) => {
      if (context.message?.method !== 'subscriptions/listen') return false;
      // 2026-07-28 subscriptions: the stream stays open for as long as the client listens.
      openSse(context.res, ': listening\n\n');
      return true;
    });
    const bridge = bridgeFor(server, '--request-timeout', String(DEADLINE_MS));
    // subscriptions/listen has no deadline: these hold every connection (MAX_CONNECTIONS, 128) for good.
    for (let i = 0; i < 128; i++) bridge.send(listen(`listen-${i}`));
    await server.waitForRequest(() => requestsWhere(server, (r) => r.message?.method === 'subscriptions/listen') === 128);
    const started = performance.now();
    bridge.send(call('queued'));
    const reply = await bridge.reply('queued', DEADLINE_MS + DEADLINE_SLACK_MS);
    expect(reply.error).toMatchObject({ code: -31008, data: { bridgeCode: 'REQUEST_TIMEOUT' } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
  });

  it('answers REQUEST_TIMEOUT at the deadline for a request reading a gzip event stream that stalls', async () => {
    const server = await serverWith(async (context) => {
      if (toolName(context) !== 'stalls') return false;
      const stream = openGzipEventStream(context.res);
      // A whole progress notification, then half an event, then nothing: the stream neither ends nor answers.
      await stream.send(sseEvent({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } }));
      await stream.send('data: {"jsonrpc":"2.0","id":"stalls","res');
      return true;
    });
    const bridge = bridgeFor(server, '--request-timeout', String(DEADLINE_MS));
    const started = performance.now();
    bridge.send(call('stalls'));
    const reply = await bridge.reply('stalls', DEADLINE_MS + DEADLINE_SLACK_MS);
    expect(reply.error).toMatchObject({ code: -31008, data: { bridgeCode: 'REQUEST_TIMEOUT' } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    bridge.send(call('next'));
    expect((await bridge.reply('next')).result).toEqual(okText('next'));
  });
});

/**
 * A 2025-era server with sessions whose listen GET is refused with `refuse` (404: no GET route, or a
 * load balancer sending it elsewhere; 400: the SDK's "no valid session" answer). Records every
 * session it issues and every DELETE.
 */
async function sessionServerRefusingGet(refuse: (res: ServerResponse) => void) {
  const issued: string[] = [];
  const deleted: string[] = [];
  const server = await serverWith(({ req, res, message }) => {
    const sent = req.headers['mcp-session-id'];
    if (req.method === 'GET') {
      refuse(res);
      return true;
    }
    if (req.method === 'DELETE') {
      if (typeof sent === 'string') deleted.push(sent);
      res.writeHead(200).end();
      return true;
    }
    if (message?.method === 'initialize') {
      const session = randomUUID();
      issued.push(session);
      sendJson(res, 200, result(message.id, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'no-get', version: '1' } }), {
        'mcp-session-id': session,
      });
      return true;
    }
    if (typeof sent !== 'string' || !issued.includes(sent) || deleted.includes(sent)) {
      sendJson(res, 404, { jsonrpc: '2.0', id: message?.id ?? null, error: { code: -32001, message: 'Session not found' } });
      return true;
    }
    if (message?.id === undefined) {
      res.writeHead(202).end();
      return true;
    }
    sendJson(res, 200, result(message.id, okText(String(message.params?.name ?? message.method))));
    return true;
  });
  return { server, issued, deleted };
}

describe('a listen GET the server refuses', () => {
  const REFUSALS: { name: string; refuse: (res: ServerResponse) => void }[] = [
    { name: '404 (no GET route)', refuse: (res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found') },
    {
      name: '400 "Bad Request: No valid session ID provided"',
      refuse: (res) => sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }),
    },
  ];

  // transports §Listening for Messages: a server that offers no stream at the endpoint answers the GET
  // with 405; a 404 (or a refusal that names the session while POSTs with it work) means the same here.
  it.each(REFUSALS)('means no listen stream when answered $name: no re-initialize storm, calls keep working, every session DELETEd', async ({ refuse }) => {
    const { server, issued, deleted } = await sessionServerRefusingGet(refuse);
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result.protocolVersion).toBe('2025-06-18');
    bridge.send(initializedNotification);
    await sleep(OBSERVATION_MS);
    const initializes = requestsWhere(server, (r) => r.message?.method === 'initialize');
    const gets = requestsWhere(server, (r) => r.method === 'GET');
    expect(initializes, `initialize POSTs in ${OBSERVATION_MS} ms (${gets} GETs)`).toBeLessThanOrEqual(3);
    expect(gets, `listen GETs in ${OBSERVATION_MS} ms (${initializes} initialize POSTs)`).toBeLessThanOrEqual(10);
    bridge.send(call('works'));
    expect((await bridge.reply('works')).result).toEqual(okText('works'));
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
    // transports §Session Management: a client that no longer needs a session SHOULD send DELETE.
    expect([...deleted].sort()).toEqual([...issued].sort());
  });
});

describe('priming events are not progress', () => {
  it('opens at most a handful of listen GETs in 3 s when every GET ends after a priming event with retry: 0', async () => {
    const server = await serverWith(({ req, res }) => {
      if (req.method !== 'GET') return false;
      // 2025-11-25 transports §Resumability: an event id with empty data primes the stream; the server then closes.
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end('id: 1\nretry: 0\ndata:\n\n');
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest('init', '2025-11-25'));
    expect((await bridge.reply('init')).result).toBeDefined();
    bridge.send(initializedNotification);
    await sleep(OBSERVATION_MS);
    expect(
      requestsWhere(server, (r) => r.method === 'GET'),
      `listen GETs in ${OBSERVATION_MS} ms`,
    ).toBeLessThanOrEqual(10);
    bridge.send(call('works'));
    expect((await bridge.reply('works')).result).toEqual(okText('works'));
  });

  it('resumes a POST stream that ends after a priming event a bounded number of times, then answers REMOTE_STREAM_ENDED long before a 30-minute deadline', async () => {
    let eventId = 0;
    const server = await serverWith(({ req, res, message }) => {
      const primeAndClose = () => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`id: e-${++eventId}\ndata:\n\n`);
      if (req.method === 'GET' && req.headers['last-event-id'] !== undefined) {
        primeAndClose();
        return true;
      }
      if (req.method === 'GET') {
        res.writeHead(405).end();
        return true;
      }
      if (message?.method === 'tools/call') {
        primeAndClose();
        return true;
      }
      return false;
    });
    const bridge = bridgeFor(server, '--request-timeout', String(30 * 60_000));
    bridge.send(initializeRequest('init', '2025-11-25'));
    expect((await bridge.reply('init')).result).toBeDefined();
    bridge.send(initializedNotification);
    const started = performance.now();
    bridge.send(call('primed'));
    await sleep(OBSERVATION_MS);
    const resumes = requestsWhere(server, (r) => r.method === 'GET' && r.headers['last-event-id'] !== undefined);
    expect(resumes, `resume GETs in ${OBSERVATION_MS} ms`).toBeLessThanOrEqual(5);
    const reply = await bridge.reply('primed', 10_000 - (performance.now() - started));
    expect(reply.error).toMatchObject({ code: -31007, data: { bridgeCode: 'REMOTE_STREAM_ENDED' } });
  }, 20_000);
});

describe('a protocolVersion that cannot be a header value', () => {
  const VERSIONS = [
    { name: 'with CR LF and another header', version: '2025-06-18\r\nX-Injected: yes' },
    { name: 'with a space', version: '2025 06 18' },
    { name: 'with a non-ASCII character', version: '2025-06-18€' },
  ];

  // transports §Protocol Version Header: the negotiated version is sent on every later request, so
  // only a value that can be a header value may be adopted.
  it.each(VERSIONS)('is not adopted ($name): the initialize is answered with an error that says why, and no request carries it', async ({ version }) => {
    const server = await serverWith(({ res, message }) => {
      if (message?.method !== 'initialize') return false;
      sendJson(res, 200, result(message.id, { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'odd-version', version: '1' } }));
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init');
    expect(reply).not.toHaveProperty('result');
    expect(JSON.stringify(reply.error)).toMatch(/protocol ?version/i);
    bridge.send(initializedNotification);
    bridge.send(call('after'));
    await bridge.reply('after');
    // A header value the server sees that is the odd version (or what its CR LF would have injected).
    const carried = server.requests.filter(
      (r) => r.rawHeaders.some((value) => value !== '2025-06-18' && /^2025.06.18/.test(value)) || r.headers['x-injected'] !== undefined,
    );
    expect(carried.map((r) => `${r.method} ${r.message?.method ?? ''}`)).toEqual([]);
  });
});

describe('a reply with both result and error', () => {
  const BOTH = (id: string) => ({ jsonrpc: '2.0', id, result: okText(id), error: { code: -32000, message: 'both at once' } });

  // JSON-RPC 2.0 §5: "Either the result member or error member MUST be included, but both members MUST NOT be included."
  it.each([
    { name: 'a JSON body', serve: (res: ServerResponse, id: string) => sendJson(res, 200, BOTH(id)) },
    {
      name: 'an event stream',
      serve: (res: ServerResponse, id: string) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(sseEvent(BOTH(id))),
    },
  ])('is answered REMOTE_BAD_REPLY when it comes in $name', async ({ serve }) => {
    const server = await serverWith((context) => {
      if (toolName(context) !== 'both') return false;
      serve(context.res, context.message.id);
      return true;
    });
    const bridge = bridgeFor(server);
    bridge.send(call('both'));
    const reply = await bridge.reply('both');
    expect(reply).not.toHaveProperty('result');
    expect(reply.error).toMatchObject({ code: -31006, data: { bridgeCode: 'REMOTE_BAD_REPLY' } });
  });
});
