// Processes a test did not start itself (a job a token command left behind): whether one still runs, and waiting for it to end.

import { readFileSync } from 'node:fs';
import { vi } from 'vitest';

/**
 * Whether `pid` is a process that still runs. A zombie does not: the job is over, and only its
 * exit status waits for a parent to collect it (an orphan's new parent, PID 1 in a container, may
 * never do so).
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; comm may itself hold ") ".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc here: kill(pid, 0) is all there is to tell
  }
}

/** The pid a shell wrote to `path` (`echo $! > path`). */
export function pidIn(path: string): number {
  const text = readFileSync(path, 'utf8').trim();
  if (!/^\d+$/.test(text)) throw new Error(`${path} holds no pid: ${JSON.stringify(text)}`);
  return Number(text);
}

/**
 * Resolves once `pid` no longer runs; rejects after `timeoutMs`. Polled: a process that is not
 * this one's child ends without an event this process could wait on.
 */
export async function waitUntilGone(pid: number, timeoutMs = 5_000): Promise<void> {
  await vi.waitFor(
    () => {
      if (isRunning(pid)) throw new Error(`process ${pid} still runs`);
    },
    { timeout: timeoutMs, interval: 20 },
  );
}
