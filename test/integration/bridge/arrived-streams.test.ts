// In-process: a small event stream that arrived whole is answered from undici's callback, with the same order, drops and fallbacks as a stream read event by event.

import { afterEach, describe, expect, it } from 'vitest';
import { result, sendSse, sseEvent, startMcpServer, type McpServer, type RouteContext } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Each stream in one write with its head, so that it reaches the bridge whole, in one read (a write per chunk lets the stream reader take the first bytes before the end comes). */
const WHOLE = { whole: true };

/** How the test server answers each tools/call (the rest gets the default MCP answers). */
type Answer = (context: RouteContext & { id: unknown }) => Promise<void>;

async function bridgeAnswering(answer: Answer): Promise<{ bridge: InProcessBridge; server: McpServer }> {
  const server = await startMcpServer({
    route: async (context) => {
      if (context.message?.method !== 'tools/call') return false;
      await answer({ ...context, id: context.message.id });
      return true;
    },
  });
  cleanups.push(() => server.close());
  const bridge = startInProcessBridge(['--url', String(server.url)]);
  cleanups.push(() => bridge.kill());
  return { bridge: await openSession(bridge, server), server };
}

const call = (id: number, token?: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: {}, ...(token === undefined ? {} : { _meta: { progressToken: token } }) },
});
const progress = (token: string, step: number) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: step } });
const logMessage = (text: string) => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: text } });

/** The methods and ids of the lines written after the session opened, in order. */
const shapes = (bridge: InProcessBridge, from: number) =>
  bridge.lines.slice(from).map((line) => {
    const message = JSON.parse(line) as { id?: unknown; method?: string };
    return message.method ?? `response ${String(message.id)}`;
  });

describe('a small event stream that arrived whole', () => {
  it('writes the messages before the response in their order, then the response once, and nothing the stream carried after it', async () => {
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendSse(
        res,
        id !== 7
          ? sseEvent(result(id, {}))
          : [
              'id: 0\ndata:\n\n',
              sseEvent(progress('t', 1), 'id: 1\n'),
              sseEvent(logMessage('half way')),
              ': a comment\n\n',
              sseEvent(progress('t', 2)),
              sseEvent(result(id, { content: [{ type: 'text', text: 'done' }] })),
              sseEvent(logMessage('after the response')),
            ].join(''),
        WHOLE,
      ),
    );
    const before = bridge.lines.length;
    bridge.send(call(7, 't'));
    expect(await bridge.reply(7)).toMatchObject({ result: { content: [{ text: 'done' }] } });
    // Whatever came after the response was dropped, not merely late: another call's answer comes after it.
    bridge.send(call(8));
    await bridge.reply(8);
    expect(shapes(bridge, before)).toEqual(['notifications/progress', 'notifications/message', 'notifications/progress', 'response 7', 'response 8']);
  });

  it('leaves a stream with an event that is not JSON to the stream reader, which says so and still answers', async () => {
    const { bridge } = await bridgeAnswering(({ res, id }) => sendSse(res, `data: {not json\n\n${sseEvent(result(id, { ok: true }))}`, WHOLE));
    bridge.send(call(3));
    expect(await bridge.reply(3)).toMatchObject({ result: { ok: true } });
    await waitForLog(bridge, /an event in the stream is not JSON; skipped/);
  });

  it('leaves a stream that ends without the response to the stream reader, which fails the request as it always did', async () => {
    const { bridge } = await bridgeAnswering(({ res }) => sendSse(res, sseEvent(logMessage('only this')), WHOLE));
    const before = bridge.lines.length;
    bridge.send(call(4));
    expect(await bridge.reply(4)).toMatchObject({ error: { data: { bridgeCode: 'REMOTE_STREAM_ENDED' } } });
    expect(shapes(bridge, before)).toEqual(['notifications/message', 'response 4']);
  });

  it('answers an error response to the request as the server sent it, and a response to another outstanding request goes to that one', async () => {
    let firstHeld = false;
    const { bridge } = await bridgeAnswering(async ({ res, id }) => {
      if (id === 11) {
        // Held open; answered by the second call's stream.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        firstHeld = true;
        return;
      }
      await sendSse(
        res,
        `${sseEvent(result(11, { from: 'the second stream' }))}${sseEvent({ jsonrpc: '2.0', id, error: { code: -32602, message: 'bad arguments' } })}`,
        WHOLE,
      );
    });
    bridge.send(call(11));
    for (let turn = 0; !firstHeld && turn < 200; turn++) await new Promise((resolve) => setTimeout(resolve, 5));
    bridge.send(call(12));
    expect(await bridge.reply(12)).toMatchObject({ error: { code: -32602, message: 'bad arguments' } });
    expect(await bridge.reply(11)).toMatchObject({ result: { from: 'the second stream' } });
  });
});

describe('a small event stream that arrived whole, from a hostile server', () => {
  it('answers a response with both a result and an error as malformed, as the stream reader does', async () => {
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendSse(res, sseEvent({ jsonrpc: '2.0', id, result: {}, error: { code: 1, message: 'both' } }), WHOLE),
    );
    bridge.send(call(30));
    expect(await bridge.reply(30)).toMatchObject({ error: { data: { bridgeCode: 'REMOTE_BAD_REPLY' } } });
  });

  it('passes on a server request that carries the id of the call, then answers the call with its response', async () => {
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendSse(
        res,
        `${sseEvent({ jsonrpc: '2.0', id, method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } })}${sseEvent(result(id, { ok: true }))}`,
        WHOLE,
      ),
    );
    const before = bridge.lines.length;
    bridge.send(call(31));
    expect(await bridge.reply(31)).toMatchObject({ result: { ok: true } });
    expect(shapes(bridge, before)).toEqual(['sampling/createMessage', 'response 31']);
  });

  it('writes one answer when the stream carries the response twice, the first as sent', async () => {
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendSse(res, `${sseEvent(result(id, { first: true }))}${sseEvent(result(id, { second: true }))}`, WHOLE),
    );
    const before = bridge.lines.length;
    bridge.send(call(32));
    expect(await bridge.reply(32)).toMatchObject({ result: { first: true } });
    bridge.send(call(33));
    await bridge.reply(33);
    expect(shapes(bridge, before)).toEqual(['response 32', 'response 33']);
  });

  it('writes the many messages before the response in their order, every one of them', async () => {
    const notes = Array.from({ length: 120 }, (_, index) => logMessage(`note ${index}`));
    const { bridge } = await bridgeAnswering(({ res, id }) =>
      sendSse(res, `${notes.map((note) => sseEvent(note)).join('')}${sseEvent(result(id, {}))}`, WHOLE),
    );
    const before = bridge.lines.length;
    bridge.send(call(34));
    await bridge.reply(34);
    const written = bridge.lines.slice(before).map((line) => JSON.parse(line) as { id?: unknown; params?: { data?: string } });
    expect(written.map((message) => message.params?.data ?? `response ${String(message.id)}`)).toEqual([
      ...notes.map((note) => note.params.data),
      'response 34',
    ]);
  });

  it('writes nothing for a call the client cancelled before its stream arrived', async () => {
    const { bridge } = await bridgeAnswering(async ({ res, id }) => {
      if (id === 35) await new Promise((resolve) => setTimeout(resolve, 100));
      await sendSse(res, `${sseEvent(logMessage(`for ${String(id)}`))}${sseEvent(result(id, {}))}`, WHOLE);
    });
    const before = bridge.lines.length;
    bridge.send(call(35));
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 35 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    bridge.send(call(36));
    await bridge.reply(36);
    expect(bridge.lines.slice(before).some((line) => line.includes('for 35') || (JSON.parse(line) as { id?: unknown }).id === 35)).toBe(false);
  });
});
