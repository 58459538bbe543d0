// Shared suite, how a bridge ends: on a stop signal, at the end of stdin, when stdout closes; each answers the work in flight.

import { describe, expect, it } from 'vitest';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';
import { openSession, serversForFile, stdoutProblems, type McpServer } from '../helpers/hardening-servers.js';

/** SIGTERM/SIGINT/SIGHUP end the process within a second: a host that stops a server waits no longer. */
const SIGNAL_EXIT_MS = 1000;

/** Defines the suite against bridges started by `mode`. */
export function defineLifecycleSuite(mode: BridgeMode): void {
  const { serve, track: stopAfterAll } = serversForFile();
  const track = (bridge: RunningBridge) => (stopAfterAll(() => bridge.kill()), bridge);

  /** A bridge with an open session (initialize + initialized accepted). */
  const startSession = (server: McpServer, args: string[] = []) => openSession(track(mode.start(['--url', server.url.href, ...args])), server);

  // A process gets each signal a host may send; in-process, the CLI's handler for all three is the abort signal.
  const signals = mode.name === 'spawned' ? (['SIGTERM', 'SIGINT', 'SIGHUP'] as const) : (['the stop signal'] as const);
  const firstSignal = signals[0];

  describe('signals', () => {
    // Ctrl-C exits 130 (128 + SIGINT) as shells expect; SIGTERM and SIGHUP are how hosts stop a server: 0.
    it.each(signals)('on %s aborts the call in flight, answers it SHUTTING_DOWN, sends DELETE and ends within 1 s', async (signal) => {
      const server = await serve({ sessions: true, route: ({ message }) => message?.params?.name === 'stall' });
      const bridge = await startSession(server);
      bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stall', arguments: {} } });
      const stalled = await server.waitForRequest((r) => r.message?.id === 2);
      const sessionId = server.requests.find((r) => r.message?.method === 'notifications/initialized')!.headers['mcp-session-id'];

      const sentAt = performance.now();
      bridge.stop(signal === 'the stop signal' ? undefined : signal);
      if (signal === 'SIGINT') expect(await bridge.exitCode).toBe(130);
      else await expectCleanEnd(bridge, 'signal');
      expect(performance.now() - sentAt).toBeLessThan(SIGNAL_EXIT_MS);
      expect(await stalled.closedByClient).toBe(true);
      expect(server.requests.filter((r) => r.method === 'DELETE').map((r) => r.headers['mcp-session-id'])).toEqual([sessionId]);
      const reply = JSON.parse(bridge.lines.find((line) => line.includes('"id":2'))!);
      expect(reply.error.data.bridgeCode).toBe('SHUTTING_DOWN');
      expect(stdoutProblems(bridge.lines, [1, 2])).toEqual([]);
    });

    it(`ends within 1 s on ${firstSignal} even when the DELETE never gets an answer`, async () => {
      const server = await serve({ sessions: true, route: ({ req }) => req.method === 'DELETE' });
      const bridge = await startSession(server);
      const sentAt = performance.now();
      bridge.stop();
      await expectCleanEnd(bridge, 'signal');
      expect(performance.now() - sentAt).toBeLessThan(SIGNAL_EXIT_MS);
      expect(server.requests.some((r) => r.method === 'DELETE')).toBe(true);
    });
  });

  describe('the end of stdin', () => {
    it('ends cleanly once the request in flight is answered and the session deleted', async () => {
      const server = await serve({ sessions: true });
      const bridge = await startSession(server);
      bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'last', arguments: {} } });
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
      expect(JSON.parse(bridge.lines.at(-1)!)).toMatchObject({ id: 2, result: { content: [{ text: 'ok last' }] } });
      expect(server.requests.at(-1)!.method).toBe('DELETE');
    });

    it('ends cleanly at once for an empty stdin, having contacted nobody', async () => {
      const server = await serve();
      const bridge = track(mode.start(['--url', server.url.href]));
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
      expect(bridge.lines).toEqual([]);
      expect(server.requests).toEqual([]);
    });
  });

  describe('a closed stdout', () => {
    it('ends cleanly on its own when the client closes its end of stdout', async () => {
      const server = await serve();
      const bridge = track(mode.start(['--url', server.url.href, '--log-level', 'debug']));
      bridge.closeStdout();
      bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'unread', arguments: {} } });
      await bridge.waitForLog(/stdout closed by the reader/);
      await expectCleanEnd(bridge, 'output-closed');
    });
  });
}
