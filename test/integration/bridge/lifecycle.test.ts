// In-process: how runBridge ends: the stop signal, stdin EOF, a failed stdin, a closed stdout; each answers the work in flight.

import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { runBridge } from '../../../src/bridge.js';
import { createConfig } from '../../../src/config/config.js';
import { createRedactor } from '../../../src/logging/redactor.js';
import { inProcessMode } from '../../helpers/bridge-mode.js';
import { openSession, serversForFile } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';
import { defineLifecycleSuite } from '../../suites/lifecycle.js';

defineLifecycleSuite(inProcessMode);

// A stdin that fails: the spawned run shows it as exit code 1 (test/e2e/hardening-signals.test.ts).
const { serve, track: stopAfterAll } = serversForFile();
const track = (bridge: InProcessBridge) => (stopAfterAll(() => bridge.kill()), bridge);

describe('a stream that fails', () => {
  it('returns "input-failed" when reading stdin fails, and logs why', async () => {
    const server = await serve();
    const bridge = track(startInProcessBridge(['--url', server.url.href]));
    bridge.input.destroy(Object.assign(new Error('read EIO'), { code: 'EIO' }));
    expect((await bridge.exited).exit).toBe('input-failed');
    expect(bridge.stderr()).toMatch(/stdin/);
    expect(bridge.lines).toEqual([]);
  });
});

// Moments only an in-process run can pick: the signal before the start, and between stdin's end and the drain.
describe('the stop signal at the edges of a run', () => {
  it('returns "signal" at once, reading nothing and contacting nobody, when the signal aborted before the start', async () => {
    const server = await serve();
    const input = new PassThrough();
    input.write(`${JSON.stringify(initializeRequest(1))}\n`);
    const output = new PassThrough();
    const config = createConfig({ options: { url: server.url.href }, env: {}, readTextFile: () => '' });
    const exit = await runBridge({
      input,
      output,
      config,
      logger: pino({ level: 'silent' }),
      redact: createRedactor([]),
      env: {},
      signal: AbortSignal.abort(),
    });
    expect(exit).toBe('signal');
    expect(server.requests).toEqual([]);
  });

  it('returns "signal" when the signal arrives while stdin has ended and a call is still in flight, answering it SHUTTING_DOWN', async () => {
    const server = await serve({ sessions: true, route: ({ message }) => message?.params?.name === 'stall' });
    const bridge = track(startInProcessBridge(['--url', server.url.href]));
    await openSession(bridge, server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stall', arguments: {} } });
    await server.waitForRequest((r) => r.message?.id === 2);
    const ended = once(bridge.input, 'end');
    bridge.end();
    await ended; // the bridge has read stdin to its end and now waits for the call in flight
    await new Promise((resolve) => setImmediate(resolve));
    bridge.signal();
    expect((await bridge.exited).exit).toBe('signal');
    expect(JSON.parse(bridge.lines.find((line) => line.includes('"id":2'))!)).toMatchObject({ id: 2, error: { data: { bridgeCode: 'SHUTTING_DOWN' } } });
  });
});
