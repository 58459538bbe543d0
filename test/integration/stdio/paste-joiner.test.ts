// A terminal's multi-line JSON through runBridge: joined into one message on a terminal, one message per line on a pipe.

import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { runBridge } from '../../../src/bridge.js';
import { createConfig } from '../../../src/config/config.js';
import { startDemoServer } from '../../../src/demo/demo-server.js';
import { createRedactor } from '../../../src/logging/redactor.js';

const TOKEN = 'paste-joiner-token';
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const pretty = (message: object) => `${JSON.stringify(message, null, 2)}\n`;
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tty', version: '1' } },
};
const CALL = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'tasks_get', arguments: { ref: 'T-1' } } };

/** Runs the bridge over `typed` as stdin, a terminal's or a pipe's; resolves with every stdout line, parsed. */
async function bridgeOver(typed: string, terminalInput: boolean, extra: Record<string, string> = {}): Promise<{ replies: any[]; log: string }> {
  const demo = await startDemoServer({ token: TOKEN });
  cleanups.push(() => demo.close());
  const env = { FENBS_TOKEN: TOKEN };
  const config = createConfig({ options: { url: demo.url.href, ...extra }, env, readTextFile: () => '' });
  const input = new PassThrough();
  const output = new PassThrough();
  let out = '';
  output.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  let log = '';
  const logStream = new PassThrough();
  logStream.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = runBridge({
    input,
    output,
    config,
    logger: pino({ level: 'warn' }, logStream),
    redact: createRedactor([TOKEN]),
    env,
    signal: new AbortController().signal,
    terminalInput,
  });
  input.end(typed);
  expect(await exited).toBe('input-ended');
  // Every line the bridge wrote, read to the end of its stdout (as the CLI ends it after runBridge).
  output.end();
  await finished(output);
  return {
    replies: out
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line)),
    log,
  };
}

describe('pretty-printed JSON on stdin', () => {
  it('is read as one message per value on a terminal: one answer each, no parse error', async () => {
    const { replies, log } = await bridgeOver(`${pretty(INITIALIZE)}{"jsonrpc":"2.0","method":"notifications/initialized"}\n${pretty(CALL)}`, true);
    expect(replies.map((reply) => reply.id)).toEqual([1, 2]);
    expect(replies[1].result.content[0].text).toContain('T-1');
    expect(log).not.toMatch(/rejected/);
  });

  it('is answered as too long, once, when the value grows past --max-line-bytes on a terminal, and reads on afresh', async () => {
    const long = 'x'.repeat(100);
    const { replies } = await bridgeOver(`{\n"a": "${long}",\n"b": "${long}",\n"c": "${long}"\n}\n{"jsonrpc":"2.0","id":7,"method":"ping"}\n`, true, {
      maxLineBytes: '256',
    });
    expect(replies[0]).toMatchObject({ id: null, error: { code: -32600, data: { bridgeCode: 'LINE_TOO_LONG', limit: 256 } } });
    expect(replies.filter((reply) => reply.error?.data?.bridgeCode === 'LINE_TOO_LONG')).toHaveLength(1);
    // The rest of that value is skipped to where its brackets close; the next message is the bridge's business again.
    expect(replies.at(-1).id).toBe(7);
  });

  it('answers a pretty-printed paste over --max-line-bytes exactly once, however many lines it has left, and serves the next message', async () => {
    const params = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`key${i}`, `a value of some length, number ${i}`]));
    const paste = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'tasks_get', arguments: params } }, null, 2);
    const { replies } = await bridgeOver(`${paste}\n{"jsonrpc":"2.0","id":7,"method":"ping"}\n`, true, { maxLineBytes: '1024' });
    expect(replies).toHaveLength(2);
    expect(replies[0]).toMatchObject({ error: { data: { bridgeCode: 'LINE_TOO_LONG' } } });
    expect(replies[1].id).toBe(7);
  });

  it('stays one message per line through a pipe: each line that is no whole message is answered on its own', async () => {
    const { replies } = await bridgeOver(pretty(CALL), false);
    expect(replies.length).toBe(pretty(CALL).trimEnd().split('\n').length);
    for (const reply of replies) expect(reply.error.code).toBe(-32700);
  });
});
