// Ids of every size: a server request whose id is an int64 (Go, Java servers) is answered by the
// client, and that answer reaches the server with the id's digits exactly as they were.

import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { sendSse, startMcpServer } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge } from '../../helpers/in-process-bridge.js';

/** More events on a stream sendSse opened. */
function writeSse(res: ServerResponse, text: string): Promise<void> {
  return new Promise((resolve) => res.end(text, () => resolve()));
}

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** 2^53 + 1: the first integer a double cannot hold, read by JSON.parse as 2^53. */
const LARGE_ID = '9007199254740993';

describe('a server request whose id is an integer beyond 2^53', () => {
  it('reaches the client with its digits, and the client’s answer reaches the server with the same digits', async () => {
    let answered: (body: string) => void = () => undefined;
    const answer = new Promise<string>((resolve) => (answered = resolve));
    const server = await startMcpServer({
      route: async ({ req, res, message, record }) => {
        if (req.method === 'POST' && message !== undefined && message.method === undefined && 'result' in message) {
          answered(record.body);
          res.writeHead(202).end();
          return true;
        }
        if (message?.method !== 'tools/call') return false;
        await sendSse(res, `data: {"jsonrpc":"2.0","id":${LARGE_ID},"method":"roots/list"}\n\n`, { end: false });
        const body = await answer;
        await writeSse(
          res,
          `data: {"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"type":"text","text":${JSON.stringify(body)}}]}}\n\n`,
        );
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url.href], { FENBS_TOKEN: 'large-ids-token' });
    cleanups.push(() => bridge.kill());
    await openSession(bridge, server);
    bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'roots', arguments: {} } });
    await bridge.waitFor((m) => m.method === 'roots/list');
    expect(bridge.lines.find((line) => line.includes('roots/list'))).toBe(`{"jsonrpc":"2.0","id":${LARGE_ID},"method":"roots/list"}`);
    bridge.send(`{"jsonrpc":"2.0","id":${LARGE_ID},"result":{"roots":[]}}`);
    const reply = await bridge.reply('call');
    expect(reply.result.content[0].text).toBe(`{"jsonrpc":"2.0","id":${LARGE_ID},"result":{"roots":[]}}`);
    expect(bridge.lines.some((line) => line.includes('"error"'))).toBe(false);
  });

  it('refuses a request of the client whose id is such an integer, saying why, rather than answer it under another number', async () => {
    const server = await startMcpServer();
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url.href], { FENBS_TOKEN: 'large-ids-token' });
    cleanups.push(() => bridge.kill());
    bridge.send(`{"jsonrpc":"2.0","id":${LARGE_ID},"method":"ping"}`);
    const reply = await bridge.waitFor((m) => m.error !== undefined);
    expect(reply).toMatchObject({
      id: null,
      error: { code: -32600, message: expect.stringMatching(/a request id must be a string or an integer of at most 2\^53/) },
    });
  });
});
