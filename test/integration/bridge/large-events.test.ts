// In-process: an event-stream event whose data is larger than LARGE_EVENT_BYTES is forwarded as the server's bytes, and fails or falls back exactly as a small one does.

import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { LARGE_EVENT_BYTES } from '../../../src/http/sse-reader.js';
import { result, startMcpServer, type McpServer, type RouteContext } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Text that makes an event's data larger than LARGE_EVENT_BYTES. */
const BULK = 'x'.repeat(LARGE_EVENT_BYTES + 1000);

/** Writes an event-stream body, cut into pieces of `chunkBytes` (which may split a character or a line end). */
function sendStream(res: ServerResponse, body: string | Buffer, chunkBytes = 300_001): void {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (let at = 0; at < bytes.length; at += chunkBytes) res.write(bytes.subarray(at, at + chunkBytes));
  res.end();
}

/** How the test server answers a tools/call (the rest gets the default MCP answers). */
type Answer = (context: RouteContext & { id: unknown; name: string }) => boolean | undefined | void;

async function bridgeAnswering(answer: Answer, args: string[] = [], env: Record<string, string> = {}): Promise<{ bridge: InProcessBridge; server: McpServer }> {
  // A resumption GET carries no message: it is answered for the last call seen.
  let last: { id: unknown; name: string } | undefined;
  const server = await startMcpServer({
    route: (context) => {
      if (context.message?.method === 'tools/call') last = { id: context.message.id, name: String(context.message.params?.name) };
      else if (context.req.method !== 'GET' || context.req.headers['last-event-id'] === undefined || last === undefined) return false;
      return answer({ ...context, ...last }) !== false;
    },
  });
  cleanups.push(() => server.close());
  const bridge = startInProcessBridge(['--url', String(server.url), ...args], env);
  cleanups.push(() => bridge.kill());
  return { bridge: await openSession(bridge, server), server };
}

const call = (id: number, name = 'big', token?: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, ...(token === undefined ? {} : { _meta: { progressToken: token } }) },
});
const progress = (token: string) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });

/** The stdout line that answered `id`, as text. */
async function lineFor(bridge: InProcessBridge, id: number): Promise<string> {
  await bridge.reply(id);
  return bridge.lines.find((line) => (JSON.parse(line) as { id?: unknown }).id === id)!;
}

describe('an event larger than LARGE_EVENT_BYTES', () => {
  it('reaches stdout as the server sent it, after the progress sent before it: key order, spacing, escapes and non-ASCII text kept', async () => {
    const data = (id: unknown) =>
      ` {"result" : {"content":[{"type":"text","text":"caf\\u00e9 \\/ é € 😀 ${BULK}"}], "isError":false} ,"id":${JSON.stringify(id)}, "jsonrpc":"2.0"}`;
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendStream(
        res,
        `: ping\r\nid: 1\r\nevent: message\r\ndata: ${JSON.stringify(progress('p'))}\r\n\r\nid: 2\r\nevent: message\r\ndata: ${data(id)}\r\n\r\n`,
      ),
    );
    bridge.send(call(2, 'big', 'p'));
    const line = await lineFor(bridge, 2);
    expect(line).toBe(data(2).trim());
    const progressAt = bridge.lines.findIndex((l) => l.includes('notifications/progress'));
    expect(progressAt).toBeGreaterThanOrEqual(0);
    expect(progressAt).toBeLessThan(bridge.lines.indexOf(line));
  });

  it('from a server notification reaches stdout as sent (without the whitespace around it), before the response', async () => {
    const note = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${BULK}"}}`;
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendStream(res, `data:  ${note}\t\n\ndata: ${JSON.stringify(result(id, { content: [] }))}\n\n`, 65_536),
    );
    bridge.send(call(2));
    await bridge.reply(2);
    const noteAt = bridge.lines.indexOf(note);
    expect(noteAt).toBeGreaterThanOrEqual(0);
    expect(noteAt).toBeLessThan(bridge.lines.findIndex((l) => (JSON.parse(l) as { id?: unknown }).id === 2));
  });

  it('spread over several data lines is written as one line, as a small one is', async () => {
    const value = (id: unknown) => result(id, { content: [{ type: 'text', text: BULK }] });
    const dataLines = (id: unknown) =>
      JSON.stringify(value(id), null, 2)
        .split('\n')
        .map((line) => `data: ${line}\n`)
        .join('');
    const { bridge } = await bridgeAnswering(({ res, id }) => sendStream(res, `${dataLines(id)}\n`));
    bridge.send(call(2));
    expect(await lineFor(bridge, 2)).toBe(JSON.stringify(value(2)));
  });

  it('with invalid UTF-8 is written as its decoded value, as a small one is', async () => {
    const { bridge } = await bridgeAnswering(({ res, id, name }) => {
      const text = name === 'large' ? BULK : 'small';
      sendStream(
        res,
        Buffer.concat([
          Buffer.from(`data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"text":"${text}`),
          Buffer.from([0xc3, 0x28, 0xff]),
          Buffer.from('"}}\n\n'),
        ]),
      );
    });
    bridge.send(call(2, 'large'));
    bridge.send(call(3, 'small'));
    expect(JSON.parse(await lineFor(bridge, 2))).toEqual(result(2, { text: `${BULK}\ufffd(\ufffd` }));
    expect(JSON.parse(await lineFor(bridge, 3))).toEqual(result(3, { text: 'small\ufffd(\ufffd' }));
  });

  it('that is not JSON is skipped with a warning, as a small one is, and the response after it arrives', async () => {
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendStream(res, `data: upstream said: ${BULK}\n\ndata: upstream said: small\n\ndata: ${JSON.stringify(result(id, { ok: true }))}\n\n`),
    );
    bridge.send(call(2));
    expect(JSON.parse(await lineFor(bridge, 2))).toEqual(result(2, { ok: true }));
    await waitForLog(bridge, /not JSON[\s\S]*not JSON/);
    expect(bridge.lines.some((line) => line.includes('upstream said'))).toBe(false);
  });

  it('with both a result and an error gets the REMOTE_BAD_REPLY a small one gets', async () => {
    const { bridge } = await bridgeAnswering(({ res, id, name }) =>
      sendStream(
        res,
        `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { text: name === 'large' ? BULK : 'small' }, error: { code: 1, message: 'both' } })}\n\n`,
      ),
    );
    bridge.send(call(2, 'large'));
    bridge.send(call(3, 'small'));
    const large = (await bridge.reply(2)).error;
    const small = (await bridge.reply(3)).error;
    expect(large).toEqual(small);
    expect(large).toMatchObject({ message: expect.stringMatching(/both a result and an error/) });
  });

  it('past --max-message-bytes gets REPLY_TOO_LARGE', async () => {
    const { bridge } = await bridgeAnswering(
      ({ res, id }) => sendStream(res, `data: ${JSON.stringify(result(id, { text: BULK.repeat(3) }))}\n\n`, 65_536),
      ['--max-message-bytes', String(2 * LARGE_EVENT_BYTES)],
    );
    bridge.send(call(2));
    expect((await bridge.reply(2)).error).toMatchObject({ data: { bridgeCode: 'REPLY_TOO_LARGE' } });
  });

  it('masks a secret in it as in a small event', async () => {
    const secret = 'sk-large-event-secret';
    const { bridge } = await bridgeAnswering(
      ({ res, id }) => sendStream(res, `data: ${JSON.stringify(result(id, { content: [{ type: 'text', text: `${BULK} ${secret}` }] }))}\n\n`),
      [],
      { FENBS_TOKEN: secret },
    );
    bridge.send(call(2));
    const line = await lineFor(bridge, 2);
    expect(line).not.toContain(secret);
    expect(line).toContain('[REDACTED]');
  });

  it('arrives on a stream resumed with Last-Event-ID after the first one ended', async () => {
    const data = (id: unknown) => JSON.stringify(result(id, { content: [{ type: 'text', text: `é ${BULK}` }] }));
    const { bridge } = await bridgeAnswering(({ req, res, id }) => {
      if (req.method === 'GET' && req.headers['last-event-id'] === 'e2') sendStream(res, `id: e3\ndata:  ${data(id)}\n\n`, 65_536);
      else if (req.method === 'POST') sendStream(res, `retry: 0\nid: e1\ndata:\n\nid: e2\ndata: ${JSON.stringify(progress('r'))}\n\n`);
      else return false;
      return true;
    });
    bridge.send(call(2, 'big', 'r'));
    expect(await lineFor(bridge, 2)).toBe(data(2));
  });
});
