// Follows a request's event stream to its response: resumes a cut 2025 stream, with backoff, bounded.

import { setTimeout as sleep } from 'node:timers/promises';
import { Backoff } from '../http/reconnect-backoff.js';
import { resumableEventId } from '../http/sse-reader.js';
import { BridgeError } from '../core/errors.js';
import { toLoggedId } from '../core/json-rpc.js';
import type { RegisteredRequest } from './transport.js';
import type { Logger } from '../logging/logger.js';
import { readReply, type ReadOptions, type StreamItem } from '../http/reply-reader.js';
import { type AbortSource } from '../core/abort.js';
import { type HttpExchange } from '../http/send.js';
import { excerptOf, type Mask } from '../logging/outgoing-text.js';

/** Resumptions of one cut POST stream in a row that bring no message before the request is given up. */
export const MAX_IDLE_RESUMES = 3;
/** How long a stream may stay open after it delivered the response before the bridge closes it. */
export const STREAM_LINGER_MS = 2_000;

export interface FollowOptions {
  pending: RegisteredRequest;
  /** The POST's own reply, an event stream. */
  first: HttpExchange;
  read: Pick<ReadOptions, 'maxMessageBytes' | 'room' | 'scanLarge' | 'refuseEarly'>;
  idleTimeoutMs: number;
  /** Masks the run's secrets in what the server sent, before any of it is cut for a log line or an error. */
  redact: Mask;
  /** 2025 streams with event ids may be resumed; a broken 2026-07-28 stream loses the request. */
  resumable: boolean;
  /** Each message of the stream, in order; resolves 'answered' when it was the request's response. */
  onMessage(item: StreamItem): Promise<'continue' | 'answered'>;
  /** Opens GET + Last-Event-ID (transports §Resumability: resumption is always a GET). */
  resume(lastEventId: string, signal: AbortSignal): Promise<HttpExchange>;
  /** Classifies a failure of the connection. */
  failure(error: unknown, signal: AbortSource): BridgeError;
  logger: Logger;
}

/** Reads the stream (and its resumptions) until the response arrived; throws a BridgeError otherwise. */
export async function followRequestStream(options: FollowOptions): Promise<void> {
  const { pending, logger } = options;
  const signal = pending.aborts;
  const backoff = new Backoff();
  let exchange = options.first;
  let lastEventId: string | undefined;
  let idleResumes = 0;
  for (;;) {
    let retryMs: number | undefined;
    let messages = 0;
    let broken: BridgeError | undefined;
    try {
      // Every key written out: a spread here gave each reading's options a hidden class of its own.
      const reply = await readReply(exchange, {
        maxMessageBytes: options.read.maxMessageBytes,
        room: options.read.room,
        scanLarge: options.read.scanLarge,
        refuseEarly: options.read.refuseEarly,
        signal,
        stream: {
          lingerMs: STREAM_LINGER_MS,
          idleTimeoutMs: options.idleTimeoutMs,
          onRetry: (ms) => (retryMs = ms),
          onItem: (item) => {
            if (item.eventId !== undefined) lastEventId = resumableEventId(item.eventId);
            if (item.message === undefined) {
              // Priming events and comments are not progress; only messages are.
              if (item.unparsed === true)
                logger.warn({ id: toLoggedId(pending.id), data: excerptOf(item.data ?? '', options.redact) }, 'an event in the stream is not JSON; skipped');
              return Promise.resolve('continue');
            }
            messages++;
            return options.onMessage(item);
          },
        },
      });
      if (reply.kind === 'stream' && reply.answered) return;
      if (reply.kind !== 'stream')
        throw resumeRefused(
          pending.method,
          reply.status,
          reply.kind === 'http-error' || reply.kind === 'unexpected-type' ? excerptOf(reply.text, options.redact) : '',
          lastEventId,
        );
    } catch (error) {
      const failure = withStatus(options.failure(error, signal), exchange.status);
      // A connection that broke after events with ids is resumed like one that ended: 2025-06-18
      // resumption exists for exactly this case (transports §Resumability and Redelivery). Our own
      // aborts and other failures stay failures.
      if (signal.aborted || failure.code !== 'REMOTE_CONNECTION_LOST' || !options.resumable || lastEventId === undefined) throw failure;
      broken = failure;
      logger.debug({ id: toLoggedId(pending.id), lastEventId, cause: failure.context.cause }, 'event stream broke; resuming');
    }
    // The stream ended (or broke) before the response. A 2025-11-25 server may close the connection
    // on purpose after events with ids: resume with GET + Last-Event-ID after `retry` ms. 2026-07-28
    // has no resumption: the request is lost (changelog major 9).
    if (messages > 0) {
      idleResumes = 0;
      backoff.progressed();
    } else {
      idleResumes++;
    }
    if (!options.resumable || lastEventId === undefined || idleResumes > MAX_IDLE_RESUMES) {
      throw new BridgeError('REMOTE_STREAM_ENDED', `the server's event stream for ${pending.method} ended without the response`, {
        status: exchange.status,
        ...(lastEventId === undefined ? {} : { lastEventId }),
        ...(broken === undefined ? {} : { cause: broken.context.cause }),
        hint: options.resumable
          ? 'the server closed the stream early and it could not be resumed; retry the call'
          : 'the request is lost; send it again with a new id',
      });
    }
    await sleep(backoff.next(retryMs), undefined, { signal: pending.signal });
    exchange = await options.resume(lastEventId, pending.signal);
    logger.debug({ id: toLoggedId(pending.id), lastEventId, status: exchange.status }, 'resuming a cut event stream');
  }
}

function resumeRefused(method: string, status: number, bodyExcerpt: string, lastEventId: string | undefined): BridgeError {
  return new BridgeError('REMOTE_STREAM_ENDED', `the stream for ${method} was cut and resuming it failed with HTTP ${status}`, {
    status,
    bodyExcerpt,
    ...(lastEventId === undefined ? {} : { lastEventId }),
    hint: 'retry the call',
  });
}

/**
 * A failure met while reading a body keeps the status its headers carried: an error reply has
 * `data.status` wherever the server sent one, a cut-off 200 included.
 */
export function withStatus(error: BridgeError, status: number): BridgeError {
  if (error.code !== 'INTERNAL' && error.context.status === undefined) error.context.status = status;
  return error;
}
