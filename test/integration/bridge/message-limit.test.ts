// In-process: --max-message-bytes bounds every message a server sends, whether its reply is a JSON body or an event stream.

import { afterEach, describe, expect, it } from 'vitest';
import { startSdkV1Server, type SdkV1ServerOptions } from '../../helpers/sdk-v1-server.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializedNotification } from '../../helpers/spawn-bridge.js';

const TOKEN = 'message-limit-test-token';
/** Far below the 5 KB result the echo tool is asked for, far above initialize's reply. */
const LIMIT_BYTES = 1000;
const CLIENT_PARAMS = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'message-limit-client', version: '1' } };
const echo = (id: number, text: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A bridge with --max-message-bytes LIMIT_BYTES, in a session with the SDK v1 server answering in `mode`. */
async function bridgeTo(mode: SdkV1ServerOptions['mode']): Promise<InProcessBridge> {
  const server = await startSdkV1Server({ mode, token: TOKEN });
  cleanups.push(() => server.close());
  const bridge = startInProcessBridge(['--url', server.url, '--max-message-bytes', String(LIMIT_BYTES)], { FENBS_TOKEN: TOKEN });
  cleanups.push(() => bridge.kill());
  bridge.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: CLIENT_PARAMS });
  expect((await bridge.reply('init')).result).toBeDefined();
  bridge.send(initializedNotification);
  return bridge;
}

describe('--max-message-bytes against the SDK v1 server', () => {
  it('answers a 5 KB result sent as an event stream with the error a 5 KB JSON body gets, under the request id', async () => {
    const streamed = await bridgeTo('sse');
    const json = await bridgeTo('json');
    streamed.send(echo(2, 'x'.repeat(5000)));
    json.send(echo(2, 'x'.repeat(5000)));
    const fromStream = await streamed.reply(2);
    const fromJson = await json.reply(2);
    expect(fromJson.error).toMatchObject({ code: -31010, data: { bridgeCode: 'REPLY_TOO_LARGE', status: 200 } });
    expect(fromStream).toEqual(fromJson);
    // One answer, and the bridge goes on: a small result still passes.
    streamed.send(echo(3, 'small'));
    expect((await streamed.reply(3)).result.content[0].text).toBe('small');
    expect(streamed.lines.filter((line) => (JSON.parse(line) as { id?: unknown }).id === 2)).toHaveLength(1);
  });

  it('passes a result within the limit sent as an event stream', async () => {
    const streamed = await bridgeTo('sse');
    streamed.send(echo(2, 'y'.repeat(500)));
    expect((await streamed.reply(2)).result.content[0].text).toBe('y'.repeat(500));
  });
});
