// The one writer of stdout: whole JSON-RPC lines, in order, waiting for drain, quiet on EPIPE.

import type { Writable } from 'node:stream';
import type { Redactor } from '../logging/redactor.js';
import { toTerminalJson } from '../core/terminal-text.js';
import { LF } from '../core/bytes.js';

/**
 * Bytes written to stdout and not yet taken by the reader, past which the bridge stops reading
 * stdin and response bodies until the reader catches up: a client that stops reading costs this
 * much memory, not the sum of every reply in flight.
 */
export const MAX_STDOUT_PENDING_BYTES = 16 * 1024 * 1024;

/**
 * How long after a progress notification the response to the request that asked for it waits
 * (see the writer). Measured with the SDK v1 client against the demo server on a 2-core machine
 * with one core kept busy: 1 ms lost the last progress in 3–7 % of calls, 4 ms in 3 %, 8 ms and
 * 16 ms in none of 300; with both cores saturated (a test suite and a fuzzer), 8 ms still lost one
 * call in about 30: a client process waiting for a core can wait a whole scheduler period (some
 * 12–24 ms with a handful of runnable processes on 2 cores). Only a response right after its own
 * request's progress pays it, and calls that report progress run far longer than this.
 */
export const PROGRESS_RESPONSE_GAP_MS = 25;
/** Requests whose progress token is remembered at once; the oldest is forgotten past this. */
export const MAX_TRACKED_PROGRESS_TOKENS = 4096;
/**
 * A line of the server's bytes up to this long is copied with its newline into one buffer and
 * written in one piece; a longer one is written as it is, followed by the newline, under one cork.
 */
export const COPIED_LINE_MAX_BYTES = 16 * 1024;

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
  /** Resolves once every response held back behind a progress notification has been written. */
  flushed(): Promise<void>;
  /**
   * Tells the writer that request `id` asked for progress under `token` (its
   * `params._meta.progressToken`): its response then waits for a progress notification just
   * written for that token. Forgotten once the response is written.
   */
  expectProgress(id: unknown, token: unknown): void;
}

/** What a write resolves with: the line went to the stream (or the stream is gone), or it could not be made. */
const WRITTEN = Promise.resolve(true);
const NOT_WRITTEN = Promise.resolve(false);

/**
 * Each message is re-serialised with JSON.stringify, which escapes every raw newline inside
 * strings, so one message is always exactly one line (stdio transport: messages "MUST NOT contain
 * embedded newlines"). A line goes to the stream in a single write call, so lines of concurrent
 * replies never interleave. `redact` masks the run's secrets in every line.
 */
export function createMessageWriter(
  output: Writable,
  onClosed: (error: Error | undefined) => void,
  redact?: Redactor,
  maxPendingBytes = MAX_STDOUT_PENDING_BYTES,
): MessageWriter {
  // Decided once: to a terminal, every line is made safe for it (toTerminalJson); to a pipe or a
  // file, the bytes go as they are, at no cost per message.
  const terminal = (output as { isTTY?: boolean }).isTTY === true;
  // The message being masked, for the one check of whether an id is the client's own: one
  // function for the writer's life, not a closure per message on the hot path.
  let writing: unknown;
  const isOwnIdOfWriting = (id: string) => isOwnId(writing, id);
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

  // The first line of an event-loop turn leaves at once; lines written after it in the same turn
  // are corked and leave together in one writev in the check phase, right after the poll phase
  // that ran every socket read ready at once. So a lone reply (a sequential client) is not kept
  // waiting behind the bookkeeping that follows its write, and replies finishing together on
  // different connections (64 in flight) cost two system calls a turn instead of one each (a
  // tick-based batch held only one socket's replies).
  let turnOpen = false; // a line left in this turn; later ones are corked until the turn ends
  let corked = false;
  /** True for the turn's first line, which is written uncorked; later lines find the output corked. */
  const beginWrite = () => {
    if (!turnOpen) return true;
    if (!corked) {
      corked = true;
      output.cork();
    }
    return false;
  };
  /** Called once the turn's first line has left (its reader waits for it, not for this). */
  const openTurn = () => {
    turnOpen = true;
    setImmediate(endTurn);
  };
  const endTurn = () => {
    turnOpen = false;
    if (!corked) return;
    corked = false;
    output.uncork();
  };

  // The response to a request that asked for progress (basic/utilities/progress: the request
  // names a `progressToken`, the notifications carry it) is written PROGRESS_RESPONSE_GAP_MS after
  // the last progress notification for that token, in a write of its own, when that progress is
  // more recent than that. SDK v1 clients handle a notification one microtask after the read that
  // carried it but a response at once, and the response removes the request's progress handler: a
  // last progress notification read together with its result is lost. The wait gives the client
  // time to read the progress first. Only that response waits; other lines go on (the order of
  // different requests' messages carries no meaning), and nothing of its own request can follow a
  // response. A progress notification for a token no request named holds nothing back.
  const requestOfToken = new Map<unknown, unknown>();
  const tokenOfRequest = new Map<unknown, unknown>();
  const progressWrittenAt = new Map<unknown, number>(); // by request id
  const forgetRequest = (id: unknown) => {
    const token = tokenOfRequest.get(id);
    if (token === undefined) return;
    tokenOfRequest.delete(id);
    if (requestOfToken.get(token) === id) requestOfToken.delete(token);
    progressWrittenAt.delete(id);
  };
  const expectProgress = (id: unknown, token: unknown) => {
    // An id still outstanding is refused (JSON-RPC ids are unique per request); that refusal is a
    // response with the same id, so it ends the first request's wait too.
    if (tokenOfRequest.has(id)) return;
    tokenOfRequest.set(id, token);
    requestOfToken.set(token, id);
    if (tokenOfRequest.size > MAX_TRACKED_PROGRESS_TOKENS) forgetRequest(tokenOfRequest.keys().next().value);
  };
  const heldBack = new Set<Promise<boolean>>();
  const holdBack = (waitMs: number, message: unknown, serialised: string | Buffer | undefined): Promise<boolean> => {
    const written = new Promise<void>((resolve) => setTimeout(resolve, waitMs)).then(() => writeNow(message, serialised));
    heldBack.add(written);
    void written.finally(() => heldBack.delete(written));
    return written;
  };

  // Not an async function: a line that leaves at once (nearly every line) answers with one shared
  // settled promise instead of a promise and an async frame of its own.
  const writeNow = (message: unknown, serialised: string | Buffer | undefined): Promise<boolean> => {
    try {
      return writeLine(message, serialised);
    } catch (error) {
      // As the async function it replaces: a failure of the stream itself is a rejection, never a throw.
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };
  const writeLine = (message: unknown, serialised: string | Buffer | undefined): Promise<boolean> => {
    if (closed) return WRITTEN;
    // The token never reaches stdout, not even when the server echoes it in its own answer:
    // desktop clients keep stdout in their log files. The same value comes back when nothing
    // needed masking, so the server's own bytes go out with no decode and re-encode.
    let line: string | Buffer;
    try {
      // JSON.stringify(undefined) is undefined, whatever its type says.
      const raw: string | Buffer | undefined = serialised ?? JSON.stringify(message);
      if (raw === undefined) return NOT_WRITTEN;
      writing = message;
      try {
        line = redact === undefined ? raw : redact.maskMessageLine(raw, isOwnIdOfWriting);
      } finally {
        // Not held past its write: a 50 MiB reply's bytes must be free before the next one comes.
        writing = undefined;
      }
      if (terminal) line = toTerminalJson(line.toString());
    } catch {
      return NOT_WRITTEN;
    }
    const first = beginWrite();
    let ready: boolean;
    if (!Buffer.isBuffer(line)) {
      ready = output.write(`${line}\n`);
    } else if (line.length <= COPIED_LINE_MAX_BYTES) {
      // One piece: a single write(2), with no cork and no writev of two buffers.
      const withNewline = Buffer.allocUnsafe(line.length + 1);
      line.copy(withNewline);
      withNewline[line.length] = LF;
      ready = output.write(withNewline);
    } else {
      // Known to be one JSON line; both writes happen under one cork, so no other line can come
      // between them, and leave in one system call.
      if (first) output.cork();
      output.write(line);
      ready = output.write('\n');
      if (first) output.uncork();
    }
    if (first) openTurn();
    if (ready || closed) return WRITTEN;
    // Back-pressure: the caller stops reading the server's body until the client catches up.
    return whenDrained().then(() => true);
  };

  return {
    get closed() {
      return closed;
    },
    write(message: unknown, serialised?: string | Buffer) {
      if (closed) return Promise.resolve(true);
      if (typeof message === 'object' && message !== null) {
        const { method, params, id } = message as { method?: unknown; params?: { progressToken?: unknown }; id?: unknown };
        if (method === 'notifications/progress') {
          const id = requestOfToken.get(params?.progressToken);
          if (id !== undefined) progressWrittenAt.set(id, performance.now());
        } else if (method === undefined && tokenOfRequest.size > 0) {
          const at = progressWrittenAt.get(id);
          forgetRequest(id);
          if (at !== undefined) {
            const waitMs = at + PROGRESS_RESPONSE_GAP_MS - performance.now();
            if (waitMs > 0) return holdBack(waitMs, message, serialised);
          }
        }
      }
      return writeNow(message, serialised);
    },
    get full() {
      return !closed && output.writableLength > maxPendingBytes;
    },
    room: () => (closed ? Promise.resolve() : whenDrained()),
    flushed: async () => {
      while (heldBack.size > 0) await Promise.all(heldBack);
    },
    expectProgress,
  };
}

/**
 * Whether `id` is the id of the client's own request that `message` answers: a response (no
 * `method`) goes to stdout only when it answers a request of the client's (the router drops the
 * rest), so its id is the one the client chose. A request or notification a server sends carries
 * an id the server chose.
 */
function isOwnId(message: unknown, id: string): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const { method, id: answered } = message as { method?: unknown; id?: unknown };
  return method === undefined && answered === id;
}
