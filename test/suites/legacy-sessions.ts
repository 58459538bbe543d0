// Shared suite, 2025-era sessions: expiry and re-initialization, the listen stream, resumption, cancel, goodbye.

import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { requestsOf, startV1Server, type V1Server } from '../helpers/sdk-v1-full-server.js';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';
import { initializedNotification } from '../helpers/spawn-bridge.js';
import { RECONNECT_DELAY_MIN_MS } from '../../src/http/reconnect-backoff.js';

/** The client's own initialize params: a re-initialization must replay exactly these. */
const CLIENT_PARAMS = {
  protocolVersion: '2025-11-25',
  capabilities: { roots: { listChanged: true }, sampling: {} },
  clientInfo: { name: 'expiry-client', version: '3.1.4' },
};
const call = (id: number, name: string, args: object, meta?: object) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta && { _meta: meta }) },
});
const parsedLines = (bridge: RunningBridge): any[] => bridge.lines.map((line) => JSON.parse(line));
const logLine = (data: string) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });

/** Defines the suite against bridges started by `mode`. */
export function defineLegacySessionSuite(mode: BridgeMode): void {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function bridgeTo(url: string): RunningBridge {
    const bridge = mode.start(['--url', url]);
    cleanups.push(() => bridge.kill());
    return bridge;
  }

  /** initialize + notifications/initialized through a new bridge; resolves once the handshake is answered. */
  async function openSession(url: string, params: object = CLIENT_PARAMS): Promise<RunningBridge> {
    const bridge = bridgeTo(url);
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params });
    expect((await bridge.reply(1)).result).toBeDefined();
    bridge.send(initializedNotification);
    return bridge;
  }

  async function v1Server(options: Parameters<typeof startV1Server>[0] = {}): Promise<V1Server> {
    const server = await startV1Server(options);
    cleanups.push(() => server.close());
    return server;
  }

  const listenStreamOpen = (server: V1Server, session?: string) =>
    server.waitFor((e) => e.ev === 'headers' && e.http === 'GET' && e.status === 200 && (session === undefined || e.session === session));

  describe('a session the server forgot', () => {
    it.each([404, 400] as const)(
      're-initializes transparently when the restarted SDK v1 server answers %i, and the next tools/calls succeed',
      async (expiry) => {
        const first = await v1Server({ expiry });
        const bridge = await openSession(first.url);
        bridge.send(call(2, 'echo', { text: 'before' }));
        expect((await bridge.reply(2)).result.content[0].text).toBe('before');
        await listenStreamOpen(first);
        const oldSession = requestsOf(first, 'POST', 'tools/call')[0]!.session;

        const second = await first.restart();
        cleanups.push(() => second.close());
        bridge.send(call(3, 'echo', { text: 'after a' }));
        bridge.send(call(4, 'echo', { text: 'after b' }));
        expect((await bridge.reply(3)).result.content[0].text).toBe('after a');
        expect((await bridge.reply(4)).result.content[0].text).toBe('after b');

        // transports §Session Management 4: a new InitializeRequest without a session id, the client's own params.
        const initializes = requestsOf(second, 'POST', 'initialize');
        expect(initializes).toHaveLength(1); // concurrent expiries share one re-initialization
        expect(initializes[0]!.body.params).toEqual(CLIENT_PARAMS);
        expect(initializes[0]!.headers).not.toHaveProperty('mcp-session-id');
        expect([1, 2, 3, 4]).not.toContain(initializes[0]!.body.id);
        const newSession = second.log.find((e) => e.session !== undefined && e.session !== oldSession)!.session!;
        const initialized = requestsOf(second, 'POST', 'notifications/initialized');
        expect(initialized.map((e) => e.session)).toEqual([newSession]);
        const retried = requestsOf(second, 'POST', 'tools/call').filter((e) => e.session === newSession);
        expect(retried.map((e) => e.headers?.['mcp-protocol-version'])).toEqual(['2025-11-25', '2025-11-25']);
        await listenStreamOpen(second, newSession);

        // The private initialize's reply is not the client's business: stdout holds only its own ids.
        const replyIds = parsedLines(bridge)
          .filter((m) => !('method' in m))
          .map((m) => m.id);
        expect(replyIds.sort()).toEqual([1, 2, 3, 4]);
        bridge.end();
        await second.waitFor((e) => e.ev === 'request' && e.http === 'DELETE' && e.session === newSession);
        await expectCleanEnd(bridge, 'input-ended');
      },
    );

    it.each([404, 400] as const)(
      're-initializes and listens again when the listen GET meets %i from the restarted server, with no client traffic',
      async (expiry) => {
        const first = await v1Server({ expiry });
        const bridge = await openSession(first.url);
        const oldSession = (await listenStreamOpen(first)).session;
        const second = await first.restart();
        cleanups.push(() => second.close());
        const reopened = await second.waitFor((e) => e.ev === 'headers' && e.http === 'GET' && e.status === 200);
        expect(reopened.session).not.toBe(oldSession);
        expect(requestsOf(second, 'POST', 'initialize').map((e) => e.body.params)).toEqual([CLIENT_PARAMS]);
        expect(bridge.lines).toHaveLength(1); // the client's own initialize reply, nothing else
      },
    );

    it('answers every affected request with an error saying so when re-initializing fails, after one shared attempt', async () => {
      const remote = await scriptedRemote((req, res) => {
        if (req.method === 'GET') return json(res, {}, 405);
        if (req.body.method === 'tools/call') return json(res, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, 404);
        if (req.body.method !== 'initialize' || remote.seen.filter((s) => s.body?.method === 'initialize').length === 1) return false;
        // The replayed initialize is refused once both calls have met the expired session.
        void remote
          .waitFor(() => remote.seen.filter((s) => s.body?.method === 'tools/call').length === 2)
          .catch(() => undefined)
          .then(() => res.writeHead(500).end('down for maintenance'));
        return true;
      });
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}));
      bridge.send(call(3, 'work', {}));
      for (const id of [2, 3]) {
        const reply = await bridge.reply(id);
        expect(reply.error).toMatchObject({ code: -31012, data: { bridgeCode: 'SESSION_LOST' } });
        expect(reply.error.message).toMatch(/re-initializ/);
      }
      expect(remote.seen.filter((s) => s.body?.method === 'initialize')).toHaveLength(2); // the client's, then one replay
    });
  });

  describe('goodbye', () => {
    it('sends DELETE with the session id when stdin closes, after the work in flight is answered', async () => {
      const server = await v1Server();
      const bridge = await openSession(server.url);
      bridge.send(call(2, 'slow', { ms: 300 }));
      await server.waitFor((e) => e.ev === 'request' && e.rpc === 'tools/call');
      bridge.end();
      expect((await bridge.reply(2)).result.content[0].text).toBe('slept');
      const goodbye = await server.waitFor((e) => e.ev === 'request' && e.http === 'DELETE');
      const session = requestsOf(server, 'POST', 'tools/call')[0]!.session;
      expect(goodbye.session).toBe(session);
      expect(goodbye.headers).toMatchObject({ 'mcp-protocol-version': '2025-11-25' });
      const answered = server.log.findIndex((e) => e.ev === 'response' && e.rpc === 'tools/call');
      expect(server.log.indexOf(goodbye)).toBeGreaterThan(answered);
      await expectCleanEnd(bridge, 'input-ended');
    });

    it.each([
      ['refuses it with 405', (res: ServerResponse) => json(res, {}, 405)],
      ['never answers it', () => true],
    ])('exits 0 on stdin EOF when the server %s', async (_how, answerDelete) => {
      const remote = await scriptedRemote((req, res) => (req.method === 'DELETE' ? answerDelete(res) : req.method === 'GET' && json(res, {}, 405)));
      const bridge = await openSession(remote.url);
      await remote.waitFor((s) => s.body?.method === 'notifications/initialized' && s.status === 202);
      bridge.end();
      expect((await remote.waitFor((s) => s.method === 'DELETE')).headers['mcp-session-id']).toBe('sess-1');
      await expectCleanEnd(bridge, 'input-ended');
      expect(bridge.lines).toHaveLength(1);
    });

    it(`sends DELETE with the session id on ${mode.name === 'spawned' ? 'SIGTERM' : 'the stop signal'}`, async () => {
      const server = await v1Server();
      const bridge = await openSession(server.url);
      const session = (await listenStreamOpen(server)).session;
      bridge.stop();
      expect((await server.waitFor((e) => e.ev === 'request' && e.http === 'DELETE')).session).toBe(session);
      await bridge.exitCode;
    });
  });

  describe('cancellation', () => {
    it('posts notifications/cancelled with the session headers, then writes nothing more for that id', async () => {
      const server = await v1Server();
      const bridge = await openSession(server.url);
      bridge.send(call(5, 'slow', { ms: 60_000 }, { progressToken: 'p5' }));
      await bridge.waitFor((m) => m.method === 'notifications/progress' && m.params.progressToken === 'p5');
      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'user pressed stop' } };
      bridge.send(cancel);

      // CAN25: the receiver stops; the server's tool sees the abort.
      await server.waitFor((e) => e.ev === 'aborted' && e.requestId === 5);
      const posted = requestsOf(server, 'POST', 'notifications/cancelled')[0]!;
      expect(posted.body).toEqual(cancel);
      expect(posted.headers).toMatchObject({ 'mcp-session-id': posted.session, 'mcp-protocol-version': '2025-11-25' });
      expect((await server.waitFor((e) => e.ev === 'response' && e.rpc === 'notifications/cancelled')).status).toBe(202);
      // Its resources are released: the bridge hung up on the call's stream.
      expect((await server.waitFor((e) => e.ev === 'response' && e.rpc === 'tools/call')).finished).toBe(false);

      bridge.send({ jsonrpc: '2.0', id: 6, method: 'ping' });
      await bridge.reply(6);
      const aboutFive = parsedLines(bridge).filter((m) => m.id === 5 || m.params?.progressToken === 'p5');
      expect(aboutFive).toHaveLength(1); // the one progress notification written before the cancel
      // Released: the id is free for a new request (ids are unique only among outstanding requests).
      bridge.send(call(5, 'echo', { text: 'id 5 again' }));
      expect((await bridge.reply(5)).result.content[0].text).toBe('id 5 again');
    });
  });

  describe('a POST stream cut before its response', () => {
    it('is resumed with GET + Last-Event-ID after the server’s retry delay (SDK v1 server polling, 2025-11-25)', async () => {
      const server = await v1Server({ resumable: true });
      const bridge = await openSession(server.url);
      bridge.send(call(2, 'poll', {}, { progressToken: 'p2' }));
      expect((await bridge.reply(2)).result.content[0].text).toBe('polled');
      const progress = parsedLines(bridge).filter((m) => m.params?.progressToken === 'p2');
      expect(progress.map((m) => m.params.message)).toEqual(['before the cut', 'after the cut']);

      const cut = server.log.find((e) => e.ev === 'cut')!;
      const session = requestsOf(server, 'POST', 'tools/call')[0]!.session;
      const resume = requestsOf(server, 'GET').find((e) => e.headers?.['last-event-id'] !== undefined)!;
      expect(resume.headers).toMatchObject({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', accept: 'text/event-stream' });
      expect(resume.headers?.['last-event-id']).toMatch(/^[0-9a-f-]{36}#\d+$/); // an id of that POST's stream
      expect(resume.at - cut.at).toBeGreaterThanOrEqual(150); // the priming event's `retry: 150`
    });

    it('is resumed with GET + Last-Event-ID when the connection breaks after events with ids', async () => {
      const progress = (n: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: n } });
      const remote = await scriptedRemote((req, res) => {
        if (req.method === 'GET' && req.headers['last-event-id'] !== 'c1') return json(res, {}, 405);
        if (req.method === 'GET')
          return sse(res, `id: c2\ndata: ${progress(2)}\n\nid: c3\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 2, result: { content: [] } })}\n\n`);
        if (req.body.method !== 'tools/call') return false;
        sse(res, `id: c1\ndata: ${progress(1)}\n\n`);
        setImmediate(() => res.socket?.destroy()); // a proxy or load balancer drops the connection
        return true;
      });
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}, { progressToken: 't' }));
      expect(await bridge.reply(2)).toEqual({ jsonrpc: '2.0', id: 2, result: { content: [] } });
      expect(
        parsedLines(bridge)
          .filter((m) => m.params?.progressToken === 't')
          .map((m) => m.params.progress),
      ).toEqual([1, 2]);
    });

    it('is answered with an error when the stream carried no event ids', async () => {
      const remote = await scriptedRemote((req, res) => {
        if (req.method === 'GET') return json(res, {}, 405);
        if (req.body.method !== 'tools/call') return false;
        sse(res, `data: ${logLine('working')}\n\n`);
        res.end(); // no id anywhere: nothing to resume from
        return true;
      });
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}));
      const reply = await bridge.reply(2);
      expect(reply.error).toMatchObject({ code: -31007, data: { bridgeCode: 'REMOTE_STREAM_ENDED' } });
      expect(parsedLines(bridge).some((m) => m.method === 'notifications/message')).toBe(true);
      expect(remote.seen.filter((s) => s.headers['last-event-id'] !== undefined)).toEqual([]);
    });

    it.each([
      ['a character outside Latin-1', 'e\u20ac1'],
      ['a control character', 'e\u00011'],
    ])('never sends back an event id holding %s as Last-Event-ID: the cut stream is answered with the connection error', async (_, id) => {
      const remote = await scriptedRemote((req, res) => {
        if (req.method === 'GET' && req.headers['last-event-id'] === undefined) return json(res, {}, 405);
        if (req.method === 'GET') return sse(res, `data: ${JSON.stringify({ jsonrpc: '2.0', id: 2, result: { content: [] } })}\n\n`);
        if (req.body.method !== 'tools/call') return false;
        sse(res, `id: ok1\ndata: ${logLine('first')}\n\nid: ${id}\ndata: ${logLine('second')}\n\n`);
        setImmediate(() => res.socket?.destroy());
        return true;
      });
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}));
      const reply = await bridge.reply(2);
      // Resuming from the id before it would replay the second event, and this one cannot be sent:
      // the stream is not resumable from here (HTML §9.2.6: the last event ID is the newest one).
      expect(reply.error).toMatchObject({ data: { bridgeCode: 'REMOTE_CONNECTION_LOST' } });
      expect(remote.seen.filter((s) => s.headers['last-event-id'] !== undefined)).toEqual([]);
    });

    it('is answered with an error when resuming it fails', async () => {
      const remote = await scriptedRemote((req, res) => {
        if (req.method === 'GET') return json(res, {}, req.headers['last-event-id'] === 'e1' ? 500 : 405);
        if (req.body.method !== 'tools/call') return false;
        sse(res, 'id: e1\nretry: 20\ndata: \n\n');
        res.end();
        return true;
      });
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}));
      const reply = await bridge.reply(2);
      expect(reply.error).toMatchObject({ code: -31007, data: { bridgeCode: 'REMOTE_STREAM_ENDED', status: 500, lastEventId: 'e1' } });
    });
  });

  describe('the listen stream', () => {
    it('opens after notifications/initialized is accepted, writes its messages to stdout and posts the client’s answers', async () => {
      const remote = await scriptedRemote(
        (req, res) => req.method === 'GET' && sse(res, `id: L1\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 'srv-1', method: 'roots/list' })}\n\n`),
      );
      const bridge = await openSession(remote.url, { ...CLIENT_PARAMS, protocolVersion: '2025-06-18' });
      const asked = await bridge.waitFor((m) => m.id === 'srv-1');
      expect(asked.method).toBe('roots/list');
      const get = remote.seen.findIndex((s) => s.method === 'GET');
      const initializedAt = remote.seen.findIndex((s) => s.body?.method === 'notifications/initialized');
      expect(get).toBeGreaterThan(initializedAt);
      expect(remote.seen[get]!.headers).toMatchObject({ accept: 'text/event-stream', 'mcp-session-id': 'sess-1', 'mcp-protocol-version': '2025-06-18' });

      bridge.send({ jsonrpc: '2.0', id: 'srv-1', result: { roots: [] } });
      const answer = await remote.waitFor((s) => s.body?.id === 'srv-1' && s.status !== undefined);
      expect(answer.body).toEqual({ jsonrpc: '2.0', id: 'srv-1', result: { roots: [] } });
      expect(answer.headers).toMatchObject({ 'mcp-session-id': 'sess-1', 'mcp-protocol-version': '2025-06-18' });
      expect(answer.status).toBe(202);
    });

    it('reconnects after the server’s retry delay with Last-Event-ID and never holds two streams', async () => {
      let open = 0;
      let mostOpen = 0;
      const remote = await scriptedRemote((req, res) => {
        if (req.method !== 'GET') return false;
        mostOpen = Math.max(mostOpen, ++open);
        res.on('close', () => open--);
        if (req.headers['last-event-id'] !== undefined) return sse(res, ': resumed\n\n'); // stays open
        sse(res, `retry: 300\nid: L1\ndata: ${logLine('one')}\n\n`);
        res.end(`id: L2\ndata: ${logLine('two')}\n\n`);
        return true;
      });
      const bridge = await openSession(remote.url);
      await bridge.waitFor((m) => m.params?.data === 'two');
      const first = await remote.waitFor((s) => s.method === 'GET' && s.doneAt !== undefined);
      const again = await remote.waitFor((s) => s.method === 'GET' && s.headers['last-event-id'] !== undefined);
      expect(again.headers['last-event-id']).toBe('L2');
      expect(again.at - first.doneAt!).toBeGreaterThanOrEqual(300 - 5);
      expect(mostOpen).toBe(1);
    });

    it('reconnects after a bounded backoff when the server gave no retry delay', async () => {
      const remote = await scriptedRemote((req, res) => {
        if (req.method !== 'GET') return false;
        if (remote.seen.filter((s) => s.method === 'GET').length > 1) return sse(res, ': second\n\n');
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end();
        return true;
      });
      await openSession(remote.url);
      const first = await remote.waitFor((s) => s.method === 'GET' && s.doneAt !== undefined);
      const again = await remote.waitFor((s) => s.method === 'GET' && s !== first);
      expect(again.at - first.doneAt!).toBeGreaterThanOrEqual(RECONNECT_DELAY_MIN_MS - 5);
      expect(again.headers).not.toHaveProperty('last-event-id'); // no event carried an id
    });

    it('does not spin when the server ends every listen stream at once with `retry: 0`', async () => {
      const remote = await scriptedRemote((req, res) => {
        if (req.method === 'GET') {
          sse(res, 'retry: 0\n\n');
          res.end();
          return true;
        }
        return answerLater(req, res);
      });
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}));
      await bridge.reply(2);
      // A bounded backoff allows a handful of attempts in that time; a busy loop makes hundreds.
      expect(remote.seen.filter((s) => s.method === 'GET').length).toBeLessThanOrEqual(4);
    });

    it('takes 405 to mean the server offers none, and does not ask again', async () => {
      const remote = await scriptedRemote((req, res) => (req.method === 'GET' ? json(res, {}, 405) : answerLater(req, res)));
      const bridge = await openSession(remote.url);
      bridge.send(call(2, 'work', {}));
      await bridge.reply(2);
      expect(remote.seen.filter((s) => s.method === 'GET')).toHaveLength(1);
    });
  });

  // A hand-written 2025-06-18 server on 127.0.0.1:0 for what the SDK server cannot be made to do on cue.

  interface Seen {
    method: string;
    headers: IncomingHttpHeaders;
    body: any;
    at: number;
    /** When the reply was finished, and its status. */
    doneAt?: number;
    status?: number;
  }

  interface ScriptedRemote {
    url: string;
    seen: Seen[];
    /** Resolves with the first exchange (past or future) matching `predicate`, re-checked as replies finish. */
    waitFor(predicate: (seen: Seen) => boolean, timeoutMs?: number): Promise<Seen>;
  }

  /** Answers what `script` takes (it returns true); the rest gets the defaults: initialize → `sess-1`, others → 202. */
  type Script = (req: Seen, res: ServerResponse) => boolean;

  function sse(res: ServerResponse, text: string): true {
    if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(text);
    return true;
  }

  function json(res: ServerResponse, body: object, status = 200): true {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    return true;
  }

  /** Answers a tools/call well after the listen backoff would have fired again: time to watch the GETs. */
  function answerLater(req: Seen, res: ServerResponse): boolean {
    if (req.body.method !== 'tools/call') return false;
    setTimeout(() => json(res, { jsonrpc: '2.0', id: req.body.id, result: { content: [] } }), 3 * RECONNECT_DELAY_MIN_MS);
    return true;
  }

  async function scriptedRemote(script: Script): Promise<ScriptedRemote> {
    const seen: Seen[] = [];
    const wakers = new Set<() => void>();
    const wake = () => [...wakers].forEach((check) => check());
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const entry: Seen = { method: req.method!, headers: req.headers, body: text === '' ? undefined : JSON.parse(text), at: Date.now() };
        res.on('finish', () => ((entry.doneAt = Date.now()), (entry.status = res.statusCode), wake()));
        seen.push(entry);
        wake();
        if (script(entry, res) || entry.method !== 'POST') return;
        const { id, method, params } = entry.body;
        if (method !== 'initialize') return void res.writeHead(202).end();
        res.setHeader('mcp-session-id', 'sess-1');
        json(res, {
          jsonrpc: '2.0',
          id,
          result: { protocolVersion: params.protocolVersion, capabilities: {}, serverInfo: { name: 'scripted', version: '1' } },
        });
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
    const waitFor = (predicate: (s: Seen) => boolean, timeoutMs = 10_000) =>
      new Promise<Seen>((resolve, reject) => {
        const check = () => {
          const found = seen.find(predicate);
          if (found === undefined) return;
          clearTimeout(timer);
          wakers.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          wakers.delete(check);
          reject(
            new Error(
              `no matching exchange within ${timeoutMs} ms; seen:\n${seen.map((e) => `${e.method} ${JSON.stringify(e.body ?? e.headers)}`).join('\n')}`,
            ),
          );
        }, timeoutMs);
        wakers.add(check);
        check();
      });
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen, waitFor };
  }
}
