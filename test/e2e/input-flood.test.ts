// A 2026-07-28 server that floods the client with input requests, at the message limit, against the built bin: one error, little memory.

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES } from '../../src/config/config.js';
import { startSdkV2Server, type SdkV2Server } from '../helpers/sdk-v2-server.js';
import { spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const TOKEN = 'input-flood-token';
/**
 * The bridge's peak resident memory for such a reply, in bytes (150 MB). The flood is refused as
 * soon as its start shows more input requests than a round may carry, so the 64 MiB body is never
 * held (55 MiB measured on Node 20); read whole, it cost 187 MiB on Node 20 and 204 MiB on Node 26,
 * and without the bound on input requests the decode alone of two million of them took gigabytes.
 */
const PEAK_RSS_LIMIT_BYTES = 150 * 1000 * 1000;

/** An input_required result just under `maxBytes`, made of roots/list input requests (about two million). */
function floodJustUnder(id: unknown, maxBytes: number): Buffer {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"input_required","inputRequests":{`;
  const tail = '},"requestState":"s"}}';
  const parts: string[] = [];
  let size = head.length + tail.length;
  for (let i = 0; ; i++) {
    const entry = `${i === 0 ? '' : ','}"r${i}":{"method":"roots/list"}`;
    if (size + entry.length > maxBytes) break;
    parts.push(entry);
    size += entry.length;
  }
  return Buffer.from(`${head}${parts.join('')}${tail}`);
}

/** The peak resident set of a process so far (Linux VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmHWM:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? Number.NaN) * 1024;
}

let server: SdkV2Server | undefined;
let bridge: BridgeProcess | undefined;
afterEach(async () => {
  bridge?.kill();
  await server?.close();
});

describe('an input_required result at the message limit', () => {
  it.each([
    ['a JSON body', false],
    ['an event in an event stream', true],
  ])(
    'in %s is answered once with INPUT_REQUESTS_EXCEEDED, asks the client nothing, and keeps the bridge under 150 MB of resident memory, never holding the body',
    async (_, asEvent) => {
      let body: Buffer | undefined;
      server = await startSdkV2Server({
        token: TOKEN,
        rawRepliesAsEvents: asEvent,
        rawToolReplies: { tasks_flood: (id) => (body = floodJustUnder(id, MAX_MESSAGE_BYTES)) },
      });
      bridge = spawnBridge(['--url', server.url], { FENBS_TOKEN: TOKEN });
      bridge.send({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo: { name: 'flood', version: '1' } },
      });
      await bridge.reply(0, 30_000);
      bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tasks_flood', arguments: {} } });
      const reply = await bridge.reply(1, 60_000);
      expect(body!.length).toBeGreaterThan(MAX_MESSAGE_BYTES - 64);
      expect(reply.error).toMatchObject({ code: -31023, data: { bridgeCode: 'INPUT_REQUESTS_EXCEEDED' } });
      const peak = peakRss(bridge.child.pid!);
      expect(bridge.lines.filter((line) => line.includes('roots/list'))).toEqual([]);
      console.log(`peak RSS of the bridge: ${(peak / 1024 / 1024).toFixed(1)} MiB for a ${(body!.length / 1024 / 1024).toFixed(1)} MiB result`);
      expect(peak).toBeLessThan(PEAK_RSS_LIMIT_BYTES);
    },
    120_000,
  );
});
