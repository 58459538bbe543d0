// One suite body, two ways to run the bridge: the built bin spawned as a child, or runBridge in this process.

import { once } from 'node:events';
import { expect } from 'vitest';
import type { BridgeExit } from '../../src/bridge.js';
import { waitForLineCount as waitForSpawnedLineCount, waitForStderr } from './hardening-servers.js';
import { startInProcessBridge, waitForLineCount, waitForLog } from './in-process-bridge.js';
import { connectInProcess } from './in-process-client.js';
import { connectThroughBridge, type BridgedClient } from './sdk-v2-server.js';
import { spawnBridge, type BridgeHandle } from './spawn-bridge.js';

/** A running bridge as a shared suite sees it, whichever way it runs. */
export interface RunningBridge extends BridgeHandle {
  /**
   * The exit code once the bridge has ended and its stdout and stderr are fully read: the process's
   * (null if a signal ended it), or in-process the code the CLI maps runBridge's result to.
   */
  exitCode: Promise<number | null>;
  /** In-process, why runBridge returned; spawned, undefined (a process shows only its exit code). */
  exitReason: Promise<BridgeExit | undefined>;
  /** Asks the bridge to stop as a host does: `signal` (SIGTERM) to the process, or in-process the abort signal the CLI turns each of them into. */
  stop(signal?: NodeJS.Signals): void;
  /** Closes the reading end of the bridge's stdout, as a client that goes away does. */
  closeStdout(): void;
  /** Whether the bridge is still running: the process has not exited, or runBridge has not returned. */
  running(): boolean;
  /** Resolves when the bridge's log (stderr) matches `pattern`, or rejects after `timeoutMs`. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves when the bridge has written at least `count` stdout lines, or rejects after `timeoutMs`. */
  waitForLineCount(count: number, timeoutMs?: number): Promise<void>;
}

/** A v2 client connected through a bridge, whichever way it runs (the spawned helper's shape). */
export type ConnectedClient = BridgedClient;

export interface BridgeMode {
  name: 'spawned' | 'in-process';
  /** Starts a bridge with the CLI's argv and environment. */
  start(args: string[], env?: Record<string, string | undefined>): RunningBridge;
  /** Connects the official v2 client through a bridge to `url` with `token` (version negotiation 'auto'). */
  connect(url: string, token: string, bridgeArgs?: string[]): Promise<ConnectedClient>;
}

/** The built bin in a child process: proves the bundle and the CLI around the pipeline. */
export const spawnedMode: BridgeMode = {
  name: 'spawned',
  start(args, env) {
    const bridge = spawnBridge(args, env);
    return {
      ...bridge,
      // 'close', not 'exit': only then have stdout and stderr been read to their end.
      exitCode: once(bridge.child, 'close').then(([code]) => code as number | null),
      exitReason: Promise.resolve(undefined),
      stop: (signal = 'SIGTERM') => void bridge.child.kill(signal),
      closeStdout: () => bridge.child.stdout.destroy(),
      running: () => bridge.child.exitCode === null && bridge.child.signalCode === null,
      waitForLog: (pattern, timeoutMs) => waitForStderr(bridge, pattern, timeoutMs),
      waitForLineCount: (count, timeoutMs) => waitForSpawnedLineCount(bridge, count, timeoutMs),
    };
  },
  connect: (url, token, bridgeArgs) => connectThroughBridge(url, token, bridgeArgs),
};

/** runBridge over PassThrough streams: the same pipeline, where v8 coverage of src/ can see it. */
export const inProcessMode: BridgeMode = {
  name: 'in-process',
  start(args, env) {
    const bridge = startInProcessBridge(args, env);
    return {
      ...bridge,
      // As the CLI maps it: only a failed stdin is a failure; EOF, a signal and a closed stdout are a clean end.
      exitCode: bridge.exited.then(({ exit }) => (exit === 'input-failed' ? 1 : 0)),
      exitReason: bridge.exited.then(({ exit }) => exit),
      stop: () => bridge.signal(),
      closeStdout: () => bridge.output.destroy(),
      // runBridge's caller ends stdout once it has returned.
      running: () => !bridge.output.writableEnded,
      waitForLog: (pattern, timeoutMs) => waitForLog(bridge, pattern, timeoutMs),
      waitForLineCount: (count, timeoutMs) => waitForLineCount(bridge, count, timeoutMs),
    };
  },
  async connect(url, token, bridgeArgs) {
    const connected = await connectInProcess(url, token, bridgeArgs);
    const { bridge } = connected;
    const logEntries = () =>
      bridge
        .stderr()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line));
    return {
      ...connected,
      logEntries,
      stderrLine: (predicate) =>
        new Promise((resolve) => {
          const check = () => {
            const entry = logEntries().find(predicate);
            if (entry === undefined) return;
            bridge.log.off('data', check);
            resolve(entry);
          };
          bridge.log.on('data', check);
          check();
        }),
    };
  },
};

/** Expects a clean end (exit code 0) and, where it is known (in-process), that the bridge ended for `reason`. */
export async function expectCleanEnd(bridge: RunningBridge, reason: BridgeExit): Promise<void> {
  expect(await bridge.exitCode).toBe(0);
  const actual = await bridge.exitReason;
  if (actual !== undefined) expect(actual).toBe(reason);
}
