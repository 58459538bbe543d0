// The 2025 era: session id, negotiated version, re-initialization, the GET listen stream, DELETE.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Endpoint } from '../http/endpoint.js';
import { mirroredHeaders, type EraProtocol } from './era.js';
import { BridgeError, isBridgeError } from '../core/errors.js';
import { bridgeErrorReply, isJsonObject, isSingleLine, isUsableId, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import { readPrivateResponse, readReply, type Reply, type StreamItem } from '../http/reply-reader.js';
import { Backoff } from '../http/reconnect-backoff.js';
import { resumableEventId } from '../http/sse-reader.js';
import { type HttpExchange } from '../http/send.js';
import { headerValue, mediaTypeOf } from '../http/header-values.js';
import { tryParseJson } from '../http/body-text.js';
import { excerptOf, LOG_EXCERPT_CHARS, type Mask } from '../logging/outgoing-text.js';
import { KeepAlive, type PingOutcome } from './keep-alive.js';

/**
 * True when a 400 body is a JSON-RPC error saying the session is unknown: what the SDK's example
 * servers answer instead of 404, so it counts as expiry wherever a session id was sent.
 */
export function saysSessionUnknown(body: string): boolean {
  const parsed = tryParseJson(body);
  const text = isJsonObject(parsed) && isJsonObject(parsed.error) && typeof parsed.error.message === 'string' ? parsed.error.message : '';
  return /session/i.test(text) && /(not found|unknown|invalid|expired|no valid|does not exist)/i.test(text);
}

/** Deadline for the bridge's own re-initialization exchange. */
export const REINITIALIZE_TIMEOUT_MS = 30_000;
/** Deadline for a DELETE of a session the bridge gives up on while it keeps running. */
export const ABANDONED_SESSION_DELETE_TIMEOUT_MS = 5_000;
/** Re-initializations in a row without a request succeeding in between, before healing stops. */
export const MAX_HEALS_WITHOUT_PROGRESS = 5;
/**
 * After MAX_HEALS_WITHOUT_PROGRESS, how long requests are answered SESSION_LOST at once before one
 * more re-initialization is tried: a server that forgets every session gets one initialize per
 * pause, and a server that comes back healthy is reached again without restarting the bridge.
 */
export const HEAL_PAUSE_MS = 30_000;
/** Deadline for one keep-alive ping: a server that takes longer to answer a ping is not kept alive by it. */
export const KEEP_ALIVE_PING_TIMEOUT_MS = 10_000;
/** JSON-RPC 2.0 §5.1: the method does not exist. */
const METHOD_NOT_FOUND = -32601;

/**
 * Visible ASCII (transports §Session Management 1 for the id); a protocol version the server
 * names is sent back in a header too, so it must be a valid header value of the same kind.
 */
const VISIBLE_ASCII = /^[\x21-\x7e]{1,256}$/;

export interface LegacySessionOptions {
  endpoint: Endpoint;
  logger: Logger;
  maxMessageBytes: number;
  /** Masks the run's secrets in what the server sent, before any of it is cut for a log line or an error. */
  redact: Mask;
  /**
   * Where messages that arrive on the session's own streams go (server requests, notifications,
   * resumed responses): the listen stream, and a keep-alive ping's stream but for its response.
   */
  onServerMessage: (message: JsonObject, serialised: string | undefined) => Promise<void>;
  /** Back-pressure from stdout, for the bodies of those streams. */
  room?: () => Promise<void> | undefined;
  /** The heal backoff's clock (monotonic milliseconds) and wait; seams for tests, the real ones otherwise. */
  clock?: { now: () => number; sleep: (ms: number) => Promise<unknown> };
  /** --keep-alive: ping the session when no POST went to it for this long, in ms; 0 or absent = never. */
  keepAliveMs?: number;
}

export class LegacySession implements EraProtocol {
  readonly name = 'legacy';
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #initializeParams: JsonObject | undefined;
  #initializing: Promise<void> | undefined;
  #endInitializing: (() => void) | undefined;
  #healing: Promise<void> | undefined;
  readonly #healBackoff = new Backoff();
  #healsWithoutProgress = 0;
  /** When the last re-initialization started, on the `now` clock. */
  #lastHealAt = 0;
  #reinitCount = 0;
  #listen: AbortController | undefined;
  /** Whether a refused listen GET may start a re-initialization (see the listen loop). */
  #listenMayHeal = true;
  #closed = false;
  readonly #abandoned = new Set<Promise<void>>();
  readonly #options: LegacySessionOptions;
  readonly #keepAlive: KeepAlive;
  /**
   * The ids of the bridge's own pings: a random part per run, so no id a client chose can equal one
   * (JSON-RPC ids must be unique among a session's outstanding requests, 2025-06-18 basic §Requests),
   * and a ping's reply can never be taken for a client's.
   */
  #pingIdPrefix: string | undefined;
  #pings = 0;

  constructor(options: LegacySessionOptions) {
    this.#options = options;
    this.#keepAlive = new KeepAlive({
      intervalMs: options.keepAliveMs ?? 0,
      ping: (signal) => this.#ping(signal),
      mayPing: () => this.#sessionId !== undefined && this.#initializing === undefined && this.#healing === undefined && !this.#closed,
      ...(options.clock === undefined ? {} : { now: options.clock.now }),
    });
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  get protocolVersion(): string | undefined {
    return this.#protocolVersion;
  }

  /** True once an initialize has completed: later messages without a 2026 claim belong to it. */
  get established(): boolean {
    return this.#protocolVersion !== undefined;
  }

  /**
   * Marks a client initialize as in flight: messages read meanwhile wait in `ready()` so that none
   * reaches the server without the session it is about to get.
   */
  beginInitialize(params: JsonObject): void {
    this.#initializeParams = params;
    this.#endInitializing?.();
    this.#initializing = new Promise((resolve) => {
      this.#endInitializing = () => {
        this.#initializing = undefined;
        this.#endInitializing = undefined;
        resolve();
      };
    });
  }

  /** The client's initialize is finished, answered or not: release whatever waited for it. */
  endInitialize(): void {
    this.#endInitializing?.();
  }

  ready(): Promise<void> | undefined {
    return this.#initializing;
  }

  /** Session id and negotiated version, for every message after initialize (transports §Protocol Version Header). */
  headers(): Record<string, string> {
    return this.#withSession({});
  }

  headersFor(message: JsonObject, method: string | undefined): Record<string, string> {
    // Every POST is traffic on the session: the keep-alive's idle time starts again.
    this.#keepAlive.touch();
    const headers = mirroredHeaders(message, method);
    // The initialize POST carries neither a session id nor a version: nothing is negotiated yet.
    return method === 'initialize' ? headers : this.#withSession(headers);
  }

  /** Adds the session id and version, once known, to `headers` (in place: this runs for every POST). */
  #withSession(headers: Record<string, string>): Record<string, string> {
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    return headers;
  }

  /**
   * A 404 to a request that carried a session id (transports §Session Management 4), or a 400 whose
   * JSON-RPC error says the session is unknown (what the SDK's example servers answer).
   */
  isExpired(reply: Reply, sentHeaders: Record<string, string>): boolean {
    if (sentHeaders['mcp-session-id'] === undefined || reply.kind !== 'http-error') return false;
    return reply.status === 404 || (reply.status === 400 && saysSessionUnknown(reply.text));
  }

  /**
   * The session the request was sent with is gone, and the client MUST start a new one
   * (transports §Session Management 4). Concurrent callers share one re-initialization; a caller
   * whose session was already replaced just retries. Heals in a row with no request succeeding
   * in between wait longer each time, and stop after MAX_HEALS_WITHOUT_PROGRESS for HEAL_PAUSE_MS.
   */
  heal(sentHeaders: Record<string, string>): Promise<void> {
    const failed = sentHeaders['mcp-session-id'];
    if (failed === undefined || this.#sessionId !== failed) return this.#healing ?? Promise.resolve();
    this.#healing ??= this.#reinitialize().finally(() => {
      this.#healing = undefined;
    });
    return this.#healing;
  }

  onResponse(method: string, message: JsonObject, exchange: HttpExchange | undefined): JsonObject {
    // Any answer, result or JSON-RPC error, shows the session works and heals start over; except
    // the answer that says the session is gone even after a heal: counting it as progress would
    // let a server that forgets every session get one new initialize per request, forever.
    if (!this.#saysSessionGone(message, exchange)) this.#progressed();
    if (method !== 'initialize' || exchange === undefined || !isJsonObject(message.result)) return message;
    const version = message.result.protocolVersion;
    if (typeof version !== 'string' || !VISIBLE_ASCII.test(version)) {
      // Every later request would carry it in MCP-Protocol-Version: a value that cannot be a header
      // is refused here, before the client believes the handshake worked.
      this.#options.logger.warn(
        { protocolVersion: typeof version === 'string' ? excerptOf(version, this.#options.redact, LOG_EXCERPT_CHARS) : version },
        'the server named a protocol version that cannot be sent as a header',
      );
      const id = isUsableId(message.id) ? message.id : null;
      return bridgeErrorReply(
        id,
        new BridgeError('REMOTE_BAD_REPLY', 'the initialize result names a protocolVersion that is not a valid header value', {
          hint: 'the server must answer initialize with a protocol version such as "2025-06-18"',
        }),
      );
    }
    // Session id and version are taken before the result reaches the client, so its very next
    // message already carries them.
    this.#adopt(exchange, version);
    return message;
  }

  /** notifications/initialized was accepted: open the listen stream (transports §Listening for Messages). */
  onAccepted(method: string | undefined): void {
    if (method !== 'notifications/initialized') return;
    this.#startListening();
    this.#keepAlive.start();
  }

  /** Shutdown has begun: no keep-alive ping from now on, and none left under way. */
  stopKeepAlive(): void {
    this.#keepAlive.stop();
  }

  /** Ends the session: stops the listen stream and sends DELETE with the session id (405 is fine). */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    this.stopKeepAlive();
    this.#listen?.abort();
    const sessionId = this.#sessionId;
    this.#sessionId = undefined;
    const deletes = [...this.#abandoned];
    if (sessionId !== undefined) deletes.push(this.#delete(sessionId, timeoutMs));
    // DELETEs of sessions abandoned earlier may still be under way: the goodbye waits for them
    // no longer than for its own.
    const grace = new AbortController();
    await Promise.race([Promise.all(deletes), sleep(timeoutMs, undefined, { signal: grace.signal }).catch(() => undefined)]);
    grace.abort();
  }

  async #delete(sessionId: string, timeoutMs: number): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const exchange = await this.#options.endpoint.delete({ ...this.headers(), 'mcp-session-id': sessionId }, signal);
      const reply = await readReply(exchange, { maxMessageBytes: this.#options.maxMessageBytes, signal, acceptAny2xx: true });
      this.#options.logger.debug({ status: reply.status }, 'session ended with DELETE');
    } catch (error) {
      this.#options.logger.debug({ err: String(error) }, 'session DELETE failed');
    }
  }

  /** A session the bridge stops using while the server may still hold it gets its DELETE (transports §Session Management 5). */
  #abandon(sessionId: string): void {
    const done = this.#delete(sessionId, ABANDONED_SESSION_DELETE_TIMEOUT_MS).finally(() => this.#abandoned.delete(done));
    this.#abandoned.add(done);
  }

  #adopt(exchange: HttpExchange, version: string): void {
    const sessionId = headerValue(exchange.headers, 'mcp-session-id');
    const previous = this.#sessionId;
    // Visible ASCII only (transports §Session Management 1); anything else is not echoed back.
    this.#sessionId = sessionId !== undefined && VISIBLE_ASCII.test(sessionId) ? sessionId : undefined;
    this.#protocolVersion = version;
    // A session replaced by a new one is left behind: a client that initializes again, or a heal.
    if (previous !== undefined && previous !== this.#sessionId) this.#abandon(previous);
  }

  /** A 404, or a 400 whose JSON-RPC error says the session is unknown, to a request sent with a session (see isExpired). */
  #saysSessionGone(message: JsonObject, exchange: HttpExchange | undefined): boolean {
    if (exchange === undefined || this.#sessionId === undefined) return false;
    if (exchange.status === 404) return true;
    return exchange.status === 400 && isJsonObject(message.error) && saysSessionUnknown(JSON.stringify({ error: message.error }));
  }

  #progressed(): void {
    this.#healsWithoutProgress = 0;
    this.#healBackoff.progressed();
  }

  async #reinitialize(): Promise<void> {
    const { endpoint, logger } = this.#options;
    const params = this.#initializeParams;
    if (params === undefined) {
      throw new BridgeError('SESSION_LOST', 'the server ended the session and there is no initialize to replay');
    }
    const now = this.#options.clock?.now() ?? performance.now();
    if (this.#healsWithoutProgress >= MAX_HEALS_WITHOUT_PROGRESS && now - this.#lastHealAt < HEAL_PAUSE_MS) {
      throw new BridgeError('SESSION_LOST', `the server ended ${MAX_HEALS_WITHOUT_PROGRESS} new sessions in a row before any request succeeded`, {
        hint: 'the server may be restarting or misrouting session traffic; retry later',
      });
    }
    if (this.#healsWithoutProgress > 0) {
      const waitMs = this.#healBackoff.next(undefined);
      await (this.#options.clock?.sleep(waitMs) ?? sleep(waitMs));
    }
    this.#healsWithoutProgress++;
    this.#lastHealAt = this.#options.clock?.now() ?? performance.now();
    this.#listen?.abort();
    const expired = this.#sessionId;
    const id = `fenbs-mcp-reinitialize-${++this.#reinitCount}`;
    logger.info({ oldSession: expired }, 'session expired; re-initializing with the original initialize params');
    const signal = AbortSignal.timeout(REINITIALIZE_TIMEOUT_MS);
    try {
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params });
      const exchange = await endpoint.post(body, { 'mcp-method': 'initialize' }, signal);
      const response = await readPrivateResponse(exchange, id, { maxMessageBytes: this.#options.maxMessageBytes, mask: this.#options.redact, signal });
      const version = isJsonObject(response.result) ? response.result.protocolVersion : undefined;
      if (typeof version !== 'string' || !VISIBLE_ASCII.test(version)) {
        throw new BridgeError('SESSION_LOST', 'the server refused the new initialize', { serverError: response.error });
      }
      // The replaced session gets its DELETE too: harmless when the server has forgotten it, and
      // it frees the session when the refusal came from something in front of the server.
      this.#adopt(exchange, version);
      const initialized = await endpoint.post(
        JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
        { ...this.headers(), 'mcp-method': 'notifications/initialized' },
        signal,
      );
      await readReply(initialized, { maxMessageBytes: this.#options.maxMessageBytes, signal, acceptAny2xx: true });
      logger.info({ session: this.#sessionId, protocolVersion: this.#protocolVersion }, 'session re-established');
      this.#startListening();
      this.#keepAlive.start();
    } catch (error) {
      const failure = isBridgeError(error) && error.code === 'SESSION_LOST' ? error : endpoint.failure(error, signal);
      throw failure.code === 'SESSION_LOST'
        ? failure
        : new BridgeError('SESSION_LOST', `the session expired and re-initializing failed: ${failure.message}`, {
            ...failure.context,
            hint: 'the server may be restarting; retry the call',
          });
    }
  }

  /**
   * One keep-alive `ping` (2025-06-18 basic/utilities/ping: the receiver MUST answer promptly with
   * an empty result) on the current session, under an id of the bridge's own. Its response is read
   * here and never reaches stdout; the requests and notifications the server may send before it on
   * the same stream (transports §Sending Messages to the Server 6) go to the client as on any other
   * stream, and the client's answers go back as any response does. A failure is logged, and the
   * session is left for the next request to heal as any expired session is.
   */
  async #ping(signal: AbortSignal): Promise<PingOutcome> {
    const { endpoint, logger, maxMessageBytes } = this.#options;
    const session = this.#sessionId;
    this.#pingIdPrefix ??= `fenbs-mcp-keep-alive-${globalThis.crypto.randomUUID()}`;
    const id = `${this.#pingIdPrefix}-${++this.#pings}`;
    const headers = { ...this.headers(), 'mcp-method': 'ping' };
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(KEEP_ALIVE_PING_TIMEOUT_MS)]);
    // The ping's response, in a JSON body or on the event stream; nothing else is.
    const isAnswer = (value: unknown): value is JsonObject => isJsonObject(value) && value.id === id && !('method' in value);
    let answer: JsonObject | undefined;
    try {
      const exchange = await endpoint.post(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }), headers, deadline);
      const reply = await readReply(exchange, {
        maxMessageBytes,
        signal: deadline,
        room: this.#options.room,
        stream: {
          lingerMs: 0,
          idleTimeoutMs: 0,
          onItem: async (item) => {
            if (isAnswer(item.message)) {
              answer = item.message;
              return 'answered';
            }
            await this.#handOn(item, 'keep-alive ping stream');
            return 'continue';
          },
        },
      });
      if (reply.kind === 'json' && isAnswer(reply.value)) answer = reply.value;
      if (signal.aborted) return 'stopped';
      if (this.isExpired(reply, headers)) {
        logger.warn({ session }, 'keep-alive ping: the server has ended the session; the next request starts a new one');
        return 'session-gone';
      }
      if (answer === undefined) {
        logger.warn({ session, status: reply.status, kind: reply.kind }, 'keep-alive ping was not answered; the next ping waits longer');
        return 'failed';
      }
      if (isJsonObject(answer.error)) {
        const code = answer.error.code;
        if (code === METHOD_NOT_FOUND) {
          logger.warn({ session }, 'keep-alive: the server does not offer ping (-32601); no more pings are sent in this run');
          return 'not-offered';
        }
        logger.warn({ session, code: typeof code === 'number' ? code : undefined }, 'keep-alive ping answered with an error; the next ping waits longer');
        return 'failed';
      }
      if (logger.isLevelEnabled('debug')) logger.debug({ session }, 'keep-alive ping answered');
      return 'answered';
    } catch (error) {
      if (signal.aborted) return 'stopped';
      const failure = isBridgeError(error) ? error : endpoint.failure(error, deadline);
      logger.warn({ session, code: failure.code }, `keep-alive ping failed: ${failure.message}; the next ping waits longer`);
      return 'failed';
    }
  }

  /**
   * An event on one of the session's own streams that the session does not read for itself: a
   * message goes where every server message goes (onServerMessage), data that is not JSON is skipped.
   */
  async #handOn(item: StreamItem, stream: string): Promise<void> {
    if (isJsonObject(item.message)) {
      await this.#options.onServerMessage(item.message, item.data !== undefined && isSingleLine(item.data) ? item.data : undefined);
    } else if (item.unparsed === true) {
      this.#options.logger.warn({ data: excerptOf(item.data ?? '', this.#options.redact) }, `${stream} event is not JSON; skipped`);
    }
  }

  /** Keeps at most one GET listen stream open, reconnecting with bounded backoff. */
  #startListening(): void {
    if (this.#closed || !this.established) return;
    this.#listen?.abort();
    const controller = new AbortController();
    this.#listen = controller;
    void this.#listenLoop(controller.signal).catch((error: unknown) => {
      this.#options.logger.warn({ err: String(error) }, 'listen stream stopped');
    });
  }

  async #listenLoop(signal: AbortSignal): Promise<void> {
    const { endpoint, logger } = this.#options;
    const backoff = new Backoff();
    let lastEventId: string | undefined;
    while (!signal.aborted && !this.#closed) {
      let retryMs: number | undefined;
      try {
        const headers = this.headers();
        if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
        const exchange = await endpoint.get(headers, signal);
        if (exchange.status === 200 && mediaTypeOf(exchange.headers) === 'text/event-stream') this.#listenMayHeal = true;
        const reply = await readReply(exchange, {
          maxMessageBytes: this.#options.maxMessageBytes,
          signal,
          room: this.#options.room,
          stream: {
            lingerMs: 0,
            idleTimeoutMs: 0,
            onRetry: (ms) => (retryMs = ms),
            onItem: async (item) => {
              if (item.eventId !== undefined) lastEventId = resumableEventId(item.eventId);
              // Only a message is progress: priming events and comments are not.
              if (isJsonObject(item.message)) backoff.progressed();
              await this.#handOn(item, 'listen stream');
              return 'continue';
            },
          },
        });
        if (reply.kind === 'stream') {
          logger.debug('listen stream ended');
        } else if (reply.kind === 'http-error' && (reply.status === 404 || reply.status === 405 || reply.status === 400)) {
          if (this.#listenMayHeal && this.isExpired(reply, headers)) {
            // The server has forgotten the session (transports §Session Management 4): heal it,
            // shared with any request that meets the same; a fresh listen stream opens then. Once
            // only until a listen stream opens again: a server that refuses the GET of every new
            // session has no listen stream, and healing again would only churn sessions.
            this.#listenMayHeal = false;
            void this.heal(headers).catch(() => undefined);
            return;
          }
          // 405 says the server offers no listen stream (transports §Listening for Messages); a
          // 404 or 400 on a session just made says the same in practice (no GET route, or a
          // balancer sending GETs elsewhere). Requests carry on without one.
          logger.debug({ status: reply.status }, 'the server offers no listen stream');
          return;
        } else {
          logger.warn(
            {
              status: reply.status,
              body:
                reply.kind === 'http-error' || reply.kind === 'unexpected-type' ? excerptOf(reply.text, this.#options.redact, LOG_EXCERPT_CHARS) : undefined,
            },
            'listen stream refused',
          );
        }
      } catch (error) {
        if (signal.aborted) return;
        logger.debug({ err: String(error) }, 'listen stream failed');
      }
      await sleep(backoff.next(retryMs), undefined, { signal }).catch(() => undefined);
    }
  }
}
