// The one writer of stdout: whole JSON-RPC lines, in order, waiting for drain, quiet on EPIPE.

import type { Writable } from 'node:stream';
import type { Redactor } from './secrets.js';

/**
 * Bytes written to stdout and not yet taken by the reader, past which the bridge stops reading
 * stdin and response bodies until the reader catches up: a client that stops reading costs this
 * much memory, not the sum of every reply in flight.
 */
export const MAX_STDOUT_PENDING_BYTES = 16 * 1024 * 1024;

export interface MessageWriter {
  /**
   * Writes one message as one line (`serialised` when given, else JSON.stringify); resolves when the output can take more. Never rejects:
   * resolves false when the message cannot be serialised (a cycle, or nesting deeper than the stack).
   */
  write(message: unknown, serialised?: string | Buffer): Promise<boolean>;
  /** True once the reader went away (EPIPE or the stream closed): later writes are dropped. */
  readonly closed: boolean;
  /** True while more than MAX_STDOUT_PENDING_BYTES wait for the reader. */
  readonly full: boolean;
  /** Resolves once stdout has drained (or closed). */
  room(): Promise<void>;
}

/**
 * Each message is re-serialised with JSON.stringify, which escapes every raw newline inside
 * strings, so one message is always exactly one line (stdio transport: messages "MUST NOT contain
 * embedded newlines"). A line goes to the stream in a single write call, so lines of concurrent
 * replies never interleave. `redact` masks the run's secrets in every line.
 */
export function createMessageWriter(output: Writable, onClosed: (error: Error | undefined) => void, redact?: Redactor, maxPendingBytes = MAX_STDOUT_PENDING_BYTES): MessageWriter {
  let closed = false;
  let drained: Promise<void> | undefined; // shared by every writer waiting for the same drain
  const close = (error: Error | undefined) => {
    if (closed) return;
    closed = true;
    onClosed(error);
  };
  output.on('error', (error) => close(error));
  output.on('close', () => close(undefined));

  const whenDrained = () =>
    (drained ??= new Promise<void>((resolve) => {
      const done = () => {
        output.off('drain', done);
        output.off('close', done);
        drained = undefined;
        resolve();
      };
      output.on('drain', done);
      output.on('close', done);
    }));

  // Lines written in the same tick leave in one writev: many replies finishing together (64 in
  // flight) then cost one system call instead of one each.
  let corked = false;
  const cork = () => {
    if (corked) return;
    corked = true;
    output.cork();
    process.nextTick(() => {
      corked = false;
      output.uncork();
    });
  };

  return {
    get closed() {
      return closed;
    },
    async write(message: unknown, serialised?: string | Buffer) {
      if (closed) return true;
      cork();
      let ready: boolean;
      // The token never reaches stdout, not even when the server echoes it in its own answer:
      // desktop clients keep stdout in their log files. The same value comes back when nothing
      // needed masking, so the server's own bytes go out with no decode and re-encode.
      let line: string | Buffer;
      try {
        // JSON.stringify(undefined) is undefined, whatever its type says.
        const raw: string | Buffer | undefined = serialised ?? JSON.stringify(message);
        if (raw === undefined) return false;
        line = redact === undefined ? raw : redact.maskMessageLine(raw);
      } catch {
        return false;
      }
      if (Buffer.isBuffer(line)) {
        // Known to be one JSON line; both writes happen in one tick, so no other line can come between them.
        output.write(line);
        ready = output.write('\n');
      } else {
        ready = output.write(`${line}\n`);
      }
      if (ready) return true;
      if (closed) return true;
      // Back-pressure: the caller stops reading the server's body until the client catches up.
      await whenDrained();
      return true;
    },
    get full() {
      return !closed && output.writableLength > maxPendingBytes;
    },
    room: () => (closed ? Promise.resolve() : whenDrained()),
  };
}
