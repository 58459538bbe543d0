// A cross-process lock file (created with O_EXCL), so bridges started together sign in and refresh once.

import { randomBytes } from 'node:crypto';
import { closeSync, lstatSync, openSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { readPrivateFile, writeAll } from './private-file.js';

/** First and longest pause between attempts to take a held lock. */
export const LOCK_POLL_FIRST_MS = 25;
export const LOCK_POLL_MAX_MS = 500;
/** A lock file that cannot be parsed (its writer died mid-write) is stale after this long. */
export const UNREADABLE_LOCK_STALE_MS = 5_000;
/** A lock file holds one small JSON object; anything larger is not a lock this code wrote. */
export const MAX_LOCK_FILE_BYTES = 1024;

export interface LockOptions {
  /** Give up waiting after this long. */
  waitMs: number;
  /** A lock older than this is stale whatever its owner (its holder hung or the clock jumped). */
  staleMs: number;
  signal: AbortSignal;
  /** Called once when the lock is found held by someone else, before waiting. */
  onWait?: () => void;
}

export class LockTimeoutError extends Error {
  override readonly name = 'LockTimeoutError';
}

interface Owner {
  pid: number;
  host: string;
  at: number;
  nonce: string;
}

/** The lock's owner; undefined when it is unreadable, half written, or not a private regular file (never read through a link, never a FIFO). */
function readOwner(path: string): Owner | undefined {
  try {
    const value = JSON.parse(readPrivateFile(path, MAX_LOCK_FILE_BYTES) ?? '') as Partial<Owner>;
    if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.at === 'number' && typeof value.nonce === 'string')
      return value as Owner;
  } catch {
    // unreadable or half written: judged by its age below
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when the lock's holder is gone: a dead process on this host, too old, unreadable for long,
 * or no lock at all (a link, a FIFO: this code only ever creates regular files). An age is taken
 * both ways, so a time in the future (a clock set back, a planted file) cannot hold the lock for ever.
 */
function isStale(path: string, staleMs: number, now: number): boolean {
  let mtimeMs: number;
  try {
    const stats = lstatSync(path);
    if (!stats.isFile()) return true;
    mtimeMs = stats.mtimeMs;
  } catch {
    return false; // gone already: the next attempt takes it
  }
  const owner = readOwner(path);
  if (owner === undefined) return Math.abs(now - mtimeMs) > UNREADABLE_LOCK_STALE_MS;
  if (Math.abs(now - owner.at) > staleMs) return true;
  return owner.host === hostname() && owner.pid !== process.pid && !isAlive(owner.pid);
}

/**
 * Creates the lock file with O_EXCL, which never follows a link (nor truncates what one points
 * to), and writes its owner. A lock whose owner could not be written (a full disk) is removed
 * at once: others would take it as stale within seconds.
 */
function tryCreate(path: string, owner: Owner): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeAll(fd, Buffer.from(JSON.stringify(owner)));
  } catch (error) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw error;
  }
  closeSync(fd);
  return true;
}

/**
 * Runs `task` holding the lock at `path`. Waits (polling with a growing pause, bounded by
 * `waitMs`) while another live process holds it; a stale lock is removed. Released in all cases,
 * and only if it is still ours.
 */
export async function withFileLock<T>(path: string, options: LockOptions, task: () => Promise<T>): Promise<T> {
  const owner: Owner = { pid: process.pid, host: hostname(), at: Date.now(), nonce: randomBytes(8).toString('hex') };
  const giveUpAt = Date.now() + options.waitMs;
  let pause = LOCK_POLL_FIRST_MS;
  let told = false;
  for (;;) {
    owner.at = Date.now();
    if (tryCreate(path, owner)) break;
    // A stale lock is removed and taken at the next attempt, after the same pause as a held one:
    // a process that keeps planting stale-looking files cannot spin this one.
    if (isStale(path, options.staleMs, Date.now())) rmSync(path, { force: true });
    else if (!told) {
      told = true;
      options.onWait?.();
    }
    if (Date.now() + pause > giveUpAt) throw new LockTimeoutError(`another fenbs-mcp held ${path} for more than ${options.waitMs} ms`);
    await sleep(pause, undefined, { signal: options.signal });
    pause = Math.min(pause * 2, LOCK_POLL_MAX_MS);
  }
  try {
    return await task();
  } finally {
    if (readOwner(path)?.nonce === owner.nonce) rmSync(path, { force: true });
  }
}
