// In-process: replies built to exhaust the bridge (compression bombs, endless event streams) cost one error answer and bounded memory.

import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { startMcpServer } from './helpers/hardening-servers.js';
import { openSession, startInProcessBridge, type InProcessBridge } from './helpers/in-process-bridge.js';

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
