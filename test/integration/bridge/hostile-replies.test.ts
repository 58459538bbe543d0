// In-process: servers built to exhaust the bridge (compression bombs, endless events, refusals forever) cost one error answer per request and bounded work.

import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_HEALS_WITHOUT_PROGRESS } from '../../../src/eras/legacy-session.js';
import { RATE_LIMIT_RETRIES } from '../../../src/transports/streamable-http.js';
import { result, sendJson, startMcpServer } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A limit far below the bomb's size, so crossing it proves the bridge stopped decoding. */
const LIMIT_BYTES = 1024 * 1024;
/** One gzip member of 16 MiB of zeros (about 16 KB on the wire); members repeat into a larger bomb. */
const BOMB_MEMBER = gzipSync(Buffer.alloc(16 * 1024 * 1024));
/** 64 members: 1 GiB once decoded, about 1 MB sent. */
const BOMB_MEMBERS = 64;

async function bridgeBombing(contentType: string, prefix: string): Promise<InProcessBridge> {
  const server = await startMcpServer({
    route: ({ res, message }) => {
      if (message?.method !== 'tools/call') return false;
      res.writeHead(200, { 'content-type': contentType, 'content-encoding': 'gzip' });
      // A text prefix then zeros: the decoded body is a JSON string or an SSE data line that never ends.
      res.write(gzipSync(Buffer.from(prefix)));
      let sent = 0;
      const more = () => {
        while (sent < BOMB_MEMBERS) {
          sent += 1;
          if (!res.write(BOMB_MEMBER)) {
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      res.on('error', () => undefined);
      more();
      return true;
    },
  });
  cleanups.push(() => server.close());
  const bridge = startInProcessBridge(['--url', String(server.url), '--max-message-bytes', String(LIMIT_BYTES)]);
  cleanups.push(() => bridge.kill());
  return openSession(bridge, server);
}

const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bomb', arguments: {} } });

describe('a compressed reply that decodes to far more than the message limit', () => {
  it('is answered with REPLY_TOO_LARGE, counted after decoding, without holding the decoded gigabyte', async () => {
    const bridge = await bridgeBombing('application/json', '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"');
    const before = process.memoryUsage().rss;
    bridge.send(call(2));
    const reply = await bridge.reply(2);
    expect(reply.error?.data?.bridgeCode).toBe('REPLY_TOO_LARGE');
    // The bound is loose on purpose: the decoded body is 1 GiB; a bridge that held it would be far past this.
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    // The bridge goes on serving: the next request gets its own answer.
    bridge.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    expect((await bridge.reply(3)).id).toBe(3);
  });

  it('as an event stream whose one event never ends, is answered with REPLY_TOO_LARGE at the event limit', async () => {
    const bridge = await bridgeBombing('text/event-stream', 'event: message\ndata: {"jsonrpc":"2.0","id":2,"result":{"text":"');
    const before = process.memoryUsage().rss;
    bridge.send(call(2));
    const reply = await bridge.reply(2);
    expect(reply.error?.data?.bridgeCode).toBe('REPLY_TOO_LARGE');
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
  });
});

describe('a server that refuses everything, forever', () => {
  it('answering 404 to every request of every new session: each request gets one answer and the re-initializations stop', async () => {
    let sessions = 0;
    const server = await startMcpServer({
      route: ({ req, res, message }) => {
        if (message?.method === 'initialize') {
          sessions += 1;
          sendJson(res, 200, result(message.id, { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'forgetful', version: '1' } }), {
            'mcp-session-id': `s${sessions}`,
          });
          return true;
        }
        if (req.headers['mcp-session-id'] !== undefined && message?.method !== 'notifications/initialized') {
          sendJson(res, 404, { jsonrpc: '2.0', id: message?.id ?? null, error: { code: -32001, message: 'Session not found' } });
          return true;
        }
        return false;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', String(server.url)]);
    cleanups.push(() => bridge.kill());
    await openSession(bridge, server);
    const ids = Array.from({ length: 12 }, (_, index) => 10 + index);
    // One after another, so each request meets the server afresh and could start healing again.
    const replies = [];
    for (const id of ids) {
      bridge.send(call(id));
      replies.push(await bridge.reply(id));
    }
    expect(replies.every((reply) => reply.error !== undefined)).toBe(true);
    // Exactly one line per id: no request answered twice, none left waiting.
    for (const id of ids) expect(bridge.lines.filter((line) => (JSON.parse(line) as { id?: unknown }).id === id)).toHaveLength(1);
    // The first session plus at most MAX_HEALS_WITHOUT_PROGRESS replays, whatever the number of requests.
    expect(sessions).toBeLessThanOrEqual(1 + MAX_HEALS_WITHOUT_PROGRESS);
  });

  it(`answering 503 with Retry-After: 0 to every call: at most ${RATE_LIMIT_RETRIES} retries per request, then the 503 is the answer`, async () => {
    const server = await startMcpServer({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/call') return false;
        sendJson(res, 503, 'busy', { 'retry-after': '0' });
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', String(server.url)]);
    cleanups.push(() => bridge.kill());
    await openSession(bridge, server);
    bridge.send(call(2));
    const reply = await bridge.reply(2);
    expect(reply.error?.data?.status).toBe(503);
    expect(server.postsFor(2)).toHaveLength(1 + RATE_LIMIT_RETRIES);
  });
});
