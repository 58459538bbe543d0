// Reads a file an option names through the injected reader, within its size limit; a missing or oversized file is a UsageError naming the option.

import { UsageError } from '../core/errors.js';

/** Thrown by a `readTextFile` when the file holds more than the bytes the caller allows. */
export class FileTooLargeError extends Error {
  override readonly name = 'FileTooLargeError';
  constructor(
    readonly path: string,
    readonly maxBytes: number,
  ) {
    super(`${path} is larger than ${maxBytes} bytes`);
  }
}

/**
 * Reads a text file (injected so config/ stays pure); throws `FileTooLargeError` rather than read
 * more than `maxBytes`.
 */
export type ReadTextFile = (path: string, maxBytes: number) => string;

export function readOptionFile(readTextFile: ReadTextFile, option: string, path: string, maxBytes: number, fix?: string): string {
  try {
    return readTextFile(path, maxBytes);
  } catch (error) {
    if (error instanceof FileTooLargeError) {
      throw new UsageError(`${option} ${path} is larger than ${maxBytes} bytes: it cannot be the right file`, fix);
    }
    throw new UsageError(`cannot read ${option} ${path}: ${(error as Error).message}`, fix);
  }
}
