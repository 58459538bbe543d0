// The one writer of stdout: whole JSON-RPC lines, in order, waiting for drain, quiet on EPIPE.

import type { Writable } from 'node:stream';

export interface MessageWriter {
  /**
   * Writes one message as one line (`serialised` when given, else JSON.stringify); resolves when the output can take more. Never rejects:
   * resolves false when the message cannot be serialised (a cycle, or nesting deeper than the stack).
   */
  write(message: unknown, serialised?: string): Promise<boolean>;
  /** True once the reader went away (EPIPE or the stream closed): later writes are dropped. */
  readonly closed: boolean;
}

/**
 * Each message is re-serialised with JSON.stringify, which escapes every raw newline inside
 * strings, so one message is always exactly one line (stdio transport: messages "MUST NOT contain
 * embedded newlines"). A line goes to the stream in a single write call, so lines of concurrent
 * replies never interleave. `redact` masks the run's secrets in every line.
 */
export function createMessageWriter(output: Writable, onClosed: (error: Error | undefined) => void, redact: (text: string) => string = (text) => text): MessageWriter {
  let closed = false;
  let drained: Promise<void> | undefined; // shared by every writer waiting for the same drain
  const close = (error: Error | undefined) => {
    if (closed) return;
    closed = true;
    onClosed(error);
  };
  output.on('error', (error) => close(error));
  output.on('close', () => close(undefined));

  return {
    get closed() {
      return closed;
    },
    async write(message: unknown, serialised?: string) {
      if (closed) return true;
      let line: string;
      try {
        // `serialised` is the server's own text for `message`, known to be one line: writing it
        // as is spares re-serialising large replies.
        // The token never reaches stdout, not even when the server echoes it in its own answer:
        // desktop clients keep stdout in their log files (hardening: secrets).
        line = `${redact(serialised ?? JSON.stringify(message))}\n`;
      } catch {
        return false;
      }
      if (output.write(line)) return true;
      if (closed) return true;
      // Back-pressure: the caller stops reading the server's body until the client catches up.
      drained ??= new Promise<void>((resolve) => {
        const done = () => {
          output.off('drain', done);
          output.off('close', done);
          drained = undefined;
          resolve();
        };
        output.on('drain', done);
        output.on('close', done);
      });
      await drained;
      return true;
    },
  };
}
