// The rules for the files that hold tokens: a private folder of this user, small regular files read and written without following a link.

import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync, statSync, writeSync, type Stats } from 'node:fs';

/** Not on Windows, where a path is never a symbolic link the way POSIX means it and modes say little. */
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
/** A FIFO opened to read would block the whole process until someone writes into it. */
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const POSIX = process.platform !== 'win32';

/** Why a folder or file with these stats is not this user's own: another owner, or writable by others. */
function ownershipProblem(stats: Stats): string | undefined {
  if (!POSIX) return undefined;
  const uid = process.getuid!();
  if (stats.uid !== uid) return `belongs to another user (uid ${stats.uid}, not ${uid})`;
  // What OpenSSH's StrictModes refuses: anyone who can write there can plant or swap a file.
  if ((stats.mode & 0o022) !== 0) return `can be written by other users (mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')})`;
  return undefined;
}

/**
 * Why `path` is no folder to keep tokens in, or undefined when it is one (or does not exist yet).
 * A symbolic link to a folder is followed: ~/.config is often one, and what counts is the folder.
 */
export function folderProblem(path: string): string | undefined {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return `cannot be examined (${(error as Error).message})`;
  }
  if (!stats.isDirectory()) return 'is not a folder';
  return ownershipProblem(stats);
}

/** A file that exists but is not read: not a regular file of this user, too large, or unreadable. */
export class UnusableFileError extends Error {
  override readonly name = 'UnusableFileError';
}

/**
 * The text of a small private file, or undefined when there is none. Never through a symbolic link
 * (O_NOFOLLOW), never a FIFO or device, never a file another user owns or can write, never more
 * than `maxBytes`: each of those throws UnusableFileError.
 */
export function readPrivateFile(path: string, maxBytes: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new UnusableFileError(code === 'ELOOP' ? 'is a symbolic link' : (error as Error).message);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new UnusableFileError('is not a regular file');
    const problem = ownershipProblem(stats);
    if (problem !== undefined) throw new UnusableFileError(problem);
    if (stats.size > maxBytes) throw new UnusableFileError(`is larger than ${maxBytes} bytes`);
    // One byte more than allowed, so a file that grew since fstat is still caught.
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length < buffer.length; length += read) read = readSync(fd, buffer, length, buffer.length - length, null);
    if (length > maxBytes) throw new UnusableFileError(`is larger than ${maxBytes} bytes`);
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}

/** Writes all of `data` to `fd` (a write may take fewer bytes than it is given). */
export function writeAll(fd: number, data: Buffer): void {
  for (let written = 0; written < data.length;) written += writeSync(fd, data, written);
}

/**
 * Replaces `path` with `text` atomically: a new private file (0600, O_EXCL, so never through a
 * planted link), flushed, then renamed over the old one. Whatever fails (a full disk, a crash
 * before the rename), the old file stays as it was, and no temporary file is left behind.
 */
export function replacePrivateFile(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    try {
      writeAll(fd, Buffer.from(text, 'utf8'));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
