// In-process: how runBridge ends: the stop signal, stdin EOF, a failed stdin, a closed stdout; each answers the work in flight.

import { describe, expect, it } from 'vitest';
import { inProcessMode } from './helpers/bridge-mode.js';
import { serversForFile } from './helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from './helpers/in-process-bridge.js';
import { defineLifecycleSuite } from './suites/lifecycle.js';

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
