// In-process: JSON replies larger than LARGE_REPLY_BYTES are forwarded as the server's bytes, and fail or fall back exactly as small ones do.

import { gzipSync } from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { LARGE_REPLY_BYTES } from '../../../src/http/reply-reader.js';
import { result, sendJson, startMcpServer, type McpServer } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Text that makes a reply larger than LARGE_REPLY_BYTES. */
const BULK = 'x'.repeat(LARGE_REPLY_BYTES + 1000);

/** How the test server answers a tools/call: the body for the call's id, and how it is sent. */
type Answer = (id: unknown, name: string) => { body: string | Buffer; send?: (res: ServerResponse, body: Buffer) => void };

async function bridgeAnswering(answer: Answer, args: string[] = [], env: Record<string, string> = {}): Promise<{ bridge: InProcessBridge; server: McpServer }> {
  const server = await startMcpServer({
    route: ({ res, message }) => {
      if (message?.method !== 'tools/call') return false;
      const { body, send } = answer(message.id, String(message.params?.name));
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
      if (send !== undefined) send(res, bytes);
      else res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length }).end(bytes);
      return true;
    },
  });
  cleanups.push(() => server.close());
  const bridge = startInProcessBridge(['--url', String(server.url), ...args], env);
  cleanups.push(() => bridge.kill());
  return { bridge: await openSession(bridge, server), server };
}

const call = (id: number, name = 'big') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

/** The stdout line that answered `id`, as text. */
async function lineFor(bridge: InProcessBridge, id: number): Promise<string> {
  await bridge.reply(id);
  return bridge.lines.find((line) => (JSON.parse(line) as { id?: unknown }).id === id)!;
}

/** The error a large and a small version of the same faulty body get: they must be the same. */
async function errorsFor(body: (id: unknown, text: string) => string): Promise<{ large: unknown; small: unknown }> {
  const { bridge } = await bridgeAnswering((id, name) => ({ body: body(id, name === 'large' ? BULK : 'small') }));
  bridge.send(call(2, 'large'));
  bridge.send(call(3, 'small'));
  const large = (await bridge.reply(2)).error;
  const small = (await bridge.reply(3)).error;
  const comparable = (error: { data?: { bodyExcerpt?: unknown } }) => ({ ...error, data: { ...error.data, bodyExcerpt: undefined } });
  return { large: comparable(large), small: comparable(small) };
}

describe('a JSON reply larger than LARGE_REPLY_BYTES', () => {
  it('reaches stdout as the server sent it: key order, spacing, escapes and non-ASCII text kept, surrounding whitespace dropped', async () => {
    const body = (id: unknown) =>
      `\r\n {"result" : {"content":[{"type":"text","text":"caf\\u00e9 \\/ é € 😀 ${BULK}"}], "isError":false} ,"id":${JSON.stringify(id)}, "jsonrpc":"2.0"}  \n`;
    const { bridge } = await bridgeAnswering((id) => ({ body: body(id) }));
    bridge.send(call(2));
    expect(await lineFor(bridge, 2)).toBe(body(2).trim());
  });

  it('reaches stdout unchanged when it arrives chunked without a Content-Length, or gzip-encoded', async () => {
    const body = (id: unknown) => JSON.stringify(result(id, { content: [{ type: 'text', text: `é${BULK}` }] }));
    const { bridge } = await bridgeAnswering((id, name) => ({
      body: body(id),
      send: (res, bytes) => {
        if (name === 'gzip') {
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(bytes));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        // Pieces that cut the two-byte "é" and leave the body large only after the first megabyte.
        for (let at = 0; at < bytes.length; at += 300_001) res.write(bytes.subarray(at, at + 300_001));
        res.end();
      },
    }));
    bridge.send(call(2, 'chunked'));
    bridge.send(call(3, 'gzip'));
    expect(await lineFor(bridge, 2)).toBe(body(2));
    expect(await lineFor(bridge, 3)).toBe(body(3));
  });

  it('masks a secret in it as in a small reply', async () => {
    const secret = 'sk-large-reply-secret';
    const { bridge } = await bridgeAnswering((id) => ({ body: JSON.stringify(result(id, { content: [{ type: 'text', text: `${BULK} ${secret}` }] })) }), [], {
      FENBS_TOKEN: secret,
    });
    bridge.send(call(2));
    const line = await lineFor(bridge, 2);
    expect(line).not.toContain(secret);
    expect(line).toContain('[REDACTED]');
  });

  it('spread over several lines is written as one line, as a small one is', async () => {
    const value = (id: unknown) => result(id, { content: [{ type: 'text', text: BULK }] });
    const { bridge } = await bridgeAnswering((id) => ({ body: JSON.stringify(value(id), null, 2) }));
    bridge.send(call(2));
    expect(await lineFor(bridge, 2)).toBe(JSON.stringify(value(2)));
  });

  it('with invalid UTF-8 is written as its decoded value, as a small one is', async () => {
    const { bridge } = await bridgeAnswering((id) => ({
      body: Buffer.concat([
        Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"${BULK}`),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('"}]}}'),
      ]),
    }));
    bridge.send(call(2));
    const reply = JSON.parse(await lineFor(bridge, 2)) as { result: { content: { text: string }[] } };
    expect(reply.result.content[0]!.text).toBe(`${BULK}\ufffd(\ufffd`);
  });

  it('that is not JSON gets the REMOTE_BAD_REPLY a small one gets', async () => {
    const { large, small } = await errorsFor((_id, text) => `upstream said: ${text}`);
    expect(large).toEqual(small);
    expect(large).toMatchObject({
      message: expect.stringMatching(/not JSON/),
      data: { bridgeCode: 'REMOTE_BAD_REPLY', hint: expect.stringMatching(/proxy or gateway/) },
    });
  });

  it('that is a JSON array gets the REMOTE_BAD_REPLY a small one gets', async () => {
    const { large, small } = await errorsFor((id, text) => JSON.stringify([result(id, { text })]));
    expect(large).toEqual(small);
    expect(large).toMatchObject({ message: expect.stringMatching(/JSON array/) });
  });

  it('for another id gets the REMOTE_BAD_REPLY a small one gets', async () => {
    const { large, small } = await errorsFor((_id, text) => JSON.stringify(result('not-yours', { text })));
    expect(large).toEqual(small);
    expect(large).toMatchObject({ message: expect.stringMatching(/not the response to this request/) });
  });

  it('with both a result and an error gets the REMOTE_BAD_REPLY a small one gets', async () => {
    const { large, small } = await errorsFor((id, text) => JSON.stringify({ jsonrpc: '2.0', id, result: { text }, error: { code: 1, message: 'both' } }));
    expect(large).toEqual(small);
    expect(large).toMatchObject({ message: expect.stringMatching(/both a result and an error/) });
  });

  it('that is a JSON-RPC error for this id is forwarded as it came', async () => {
    const body = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: 'too much', data: BULK } });
    const { bridge } = await bridgeAnswering((id) => ({ body: body(id) }));
    bridge.send(call(2));
    expect(await lineFor(bridge, 2)).toBe(body(2));
  });

  it('to tools/list is still read whole: the tool filter takes out a hidden tool', async () => {
    const tools = [
      { name: 'shown', description: BULK, inputSchema: { type: 'object' } },
      { name: 'hidden', description: 'no', inputSchema: { type: 'object' } },
    ];
    const server = await startMcpServer({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/list') return false;
        sendJson(res, 200, result(message.id, { tools }));
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', String(server.url), '--deny-tools', 'hidden']);
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest(1));
    await bridge.reply(1);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
    const reply = (await bridge.reply(2)) as { result: { tools: { name: string }[] } };
    expect(reply.result.tools.map((tool) => tool.name)).toEqual(['shown']);
  });

  it('to a call the era translator sent is read by the translator and reaches the client under the client id', async () => {
    // A 2026-07-28-only server: it refuses a 2025 initialize and answers server/discover.
    const text = `é${BULK}`;
    const server = await startMcpServer({
      route: ({ res, message }) => {
        switch (message?.method) {
          case 'initialize':
            sendJson(res, 400, { jsonrpc: '2.0', id: message.id, error: { code: -32022, message: 'unsupported protocol version' } });
            return true;
          case 'server/discover':
            sendJson(res, 200, result(message.id, { supportedVersions: ['2026-07-28'], capabilities: { tools: {} } }));
            return true;
          case 'tools/call':
            sendJson(res, 200, result(message.id, { content: [{ type: 'text', text }] }));
            return true;
          default:
            return false;
        }
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', String(server.url)]);
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest(1));
    expect((await bridge.reply(1)).result).toBeDefined();
    bridge.send(call(2));
    expect(await bridge.reply(2)).toEqual({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text }] } });
    const posted = server.requests.find((r) => r.message?.method === 'tools/call')!;
    expect(posted.message.id).not.toBe(2);
  });
});
