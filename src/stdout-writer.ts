// The one writer of stdout: whole JSON-RPC lines, in order, waiting for drain, quiet on EPIPE.

import type { Writable } from 'node:stream';
import type { Redactor } from './secrets.js';

/**
 * Bytes written to stdout and not yet taken by the reader, past which the bridge stops reading
 * stdin and response bodies until the reader catches up: a client that stops reading costs this
 * much memory, not the sum of every reply in flight.
 */
export const MAX_STDOUT_PENDING_BYTES = 16 * 1024 * 1024;

/** How long a response waits after a progress notification written in the same turn (see the writer). */
export const PROGRESS_RESPONSE_GAP_MS = 1;

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
  let batch = 0; // the corked batch, 0 when none
  const cork = () => {
    if (batch !== 0) return;
    const id = ++batches;
    batch = id;
    output.cork();
    process.nextTick(() => endBatch(id));
  };
  const endBatch = (id: number) => {
    if (batch !== id) return;
    batch = 0;
    output.uncork();
  };
  let batches = 0;

  // A response written in the same turn of the event loop as a progress notification waits
  // PROGRESS_RESPONSE_GAP_MS first, in a write of its own: SDK v1 clients handle a notification one
  // microtask after the read that carried it but a response at once, and the response removes the
  // request's progress handler, so a progress notification read together with its result is
  // lost. The gap lets the client read the progress first. Lines written meanwhile queue behind
  // the response, so the order on stdout never changes.
  let responseGap: Promise<void> | undefined;
  let progressThisTurn = false;
  const markProgress = () => {
    if (progressThisTurn) return;
    progressThisTurn = true;
    setImmediate(() => (progressThisTurn = false));
  };

  return {
    get closed() {
      return closed;
    },
    async write(message: unknown, serialised?: string | Buffer) {
      if (closed) return true;
      const response = isResponse(message);
      if (response && progressThisTurn) {
        progressThisTurn = false;
        endBatch(batch);
        responseGap = new Promise<void>((resolve) => setTimeout(resolve, PROGRESS_RESPONSE_GAP_MS));
      }
      const gap = responseGap;
      if (gap !== undefined) {
        await gap;
        if (responseGap === gap) responseGap = undefined;
        if (closed) return true;
      }
      cork();
      if (!response && isProgress(message)) markProgress();
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

/** A JSON-RPC response (a result or an error for an id), as opposed to a request or notification. */
function isResponse(message: unknown): boolean {
  return typeof message === 'object' && message !== null && !('method' in message);
}

function isProgress(message: unknown): boolean {
  return typeof message === 'object' && message !== null && (message as { method?: unknown }).method === 'notifications/progress';
}
