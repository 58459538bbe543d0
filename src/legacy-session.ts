// The 2025-era session: id, negotiated version, re-initialization, the GET listen stream, DELETE.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Endpoint } from './endpoint.js';
import { BridgeError, isBridgeError } from './errors.js';
import { isJsonObject, isSingleLine, type JsonObject } from './json-rpc.js';
import type { Logger } from './logger.js';
import { headerValue, mediaTypeOf, readErrorBody, readPrivateResponse, readStreamItems, tryParseJson } from './reply-reader.js';
import type { HttpExchange } from './remote.js';

/**
 * True when a 400 body is a JSON-RPC error saying the session is unknown: what the SDK's example
 * servers answer instead of 404 (field notes §3), so it counts as expiry wherever a session id was sent.
 */
export function saysSessionUnknown(body: string): boolean {
  const parsed = tryParseJson(body);
  const text = isJsonObject(parsed) && isJsonObject(parsed.error) && typeof parsed.error.message === 'string' ? parsed.error.message : '';
  return /session/i.test(text) && /(not found|unknown|invalid|expired|no valid|does not exist)/i.test(text);
}

/** Bounded backoff for the listen stream: never a busy loop, never a long silence after a blip. */
export const LISTEN_BACKOFF_MIN_MS = 500;
export const LISTEN_BACKOFF_MAX_MS = 30_000;
/** The longest `retry:` the bridge honours; a server asking for more gets this. */
export const MAX_RETRY_DELAY_MS = 60_000;
/** Deadline for the bridge's own re-initialization exchange. */
export const REINITIALIZE_TIMEOUT_MS = 30_000;

export interface LegacySessionOptions {
  endpoint: Endpoint;
  logger: Logger;
  maxMessageBytes: number;
  /** Where messages that arrive on the listen stream go (server requests, notifications, resumed responses). */
  onServerMessage: (message: JsonObject, serialised: string | undefined) => Promise<void>;
}

export class LegacySession {
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #initializeParams: JsonObject | undefined;
  #initializing: Promise<void> | undefined;
  #endInitializing: (() => void) | undefined;
  #healing: Promise<void> | undefined;
  #reinitCount = 0;
  #listen: AbortController | undefined;
  #closed = false;
  readonly #options: LegacySessionOptions;

  constructor(options: LegacySessionOptions) {
    this.#options = options;
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  get protocolVersion(): string | undefined {
    return this.#protocolVersion;
  }

  /** True once a legacy initialize has completed: later messages without a modern claim belong to it. */
  get established(): boolean {
    return this.#protocolVersion !== undefined;
  }

  /**
   * Marks a client initialize as in flight: messages read meanwhile wait in `ready()` so that
   * none reaches the server without the session it is about to get (core issue item 6).
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

  /** Takes the session id (only from an initialize response, lifecycle §Session Management) and the version. */
  completeInitialize(exchange: HttpExchange, result: unknown): void {
    this.#adopt(exchange, result);
    this.#endInitializing?.();
  }

  /** The client's initialize failed: release whatever waited for it. */
  abandonInitialize(): void {
    this.#endInitializing?.();
  }

  /** Resolves when no initialize is pending (immediately in the common case). */
  ready(): Promise<void> {
    return this.#initializing ?? Promise.resolve();
  }

  /** Session id and negotiated version, for every legacy message after initialize (transports §Protocol Version Header). */
  headers(): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    return headers;
  }

  /** notifications/initialized was accepted: open the listen stream (transports §Listening for Messages). */
  onInitialized(): void {
    this.#startListening();
  }

  /**
   * The server answered 404 (or a 400 "invalid session") to a request that carried `failedSessionId`:
   * the session is gone, and the client MUST start a new one (transports §Session Management 4).
   * Concurrent callers share one re-initialization; a caller whose session was already replaced
   * just retries.
   */
  heal(failedSessionId: string): Promise<void> {
    if (this.#sessionId !== failedSessionId) return this.#healing ?? Promise.resolve();
    this.#healing ??= this.#reinitialize().finally(() => {
      this.#healing = undefined;
    });
    return this.#healing;
  }

  /** Ends the session: stops the listen stream and sends DELETE with the session id (405 is fine). */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    this.#listen?.abort();
    const sessionId = this.#sessionId;
    if (sessionId === undefined) return;
    this.#sessionId = undefined;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const exchange = await this.#options.endpoint.delete({ ...this.headers(), 'mcp-session-id': sessionId }, signal);
      await exchange.body.dump();
      this.#options.logger.debug({ status: exchange.status }, 'session ended with DELETE');
    } catch (error) {
      this.#options.logger.debug({ err: String(error) }, 'session DELETE failed');
    }
  }

  #adopt(exchange: HttpExchange, result: unknown): void {
    const sessionId = headerValue(exchange.headers, 'mcp-session-id');
    // Visible ASCII only (transports §Session Management 1); anything else is not echoed back.
    this.#sessionId = sessionId !== undefined && /^[\x21-\x7e]+$/.test(sessionId) ? sessionId : undefined;
    const version = isJsonObject(result) && typeof result.protocolVersion === 'string' ? result.protocolVersion : undefined;
    this.#protocolVersion = version;
  }

  async #reinitialize(): Promise<void> {
    const { endpoint, logger } = this.#options;
    const params = this.#initializeParams;
    if (params === undefined) {
      throw new BridgeError('SESSION_LOST', 'the server ended the session and there is no initialize to replay');
    }
    this.#listen?.abort();
    const id = `fenbs-mcp-reinitialize-${++this.#reinitCount}`;
    logger.info({ oldSession: this.#sessionId }, 'session expired; re-initializing with the original initialize params');
    const signal = AbortSignal.timeout(REINITIALIZE_TIMEOUT_MS);
    try {
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params });
      const exchange = await endpoint.post(body, { 'mcp-method': 'initialize' }, signal);
      const response = await readPrivateResponse(exchange, id, this.#options.maxMessageBytes);
      if (!isJsonObject(response.result)) {
        throw new BridgeError('SESSION_LOST', 'the server refused the new initialize', { serverError: response.error });
      }
      this.#adopt(exchange, response.result);
      const initialized = await endpoint.post(
        JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
        { ...this.headers(), 'mcp-method': 'notifications/initialized' },
        signal,
      );
      await initialized.body.dump();
      logger.info({ session: this.#sessionId, protocolVersion: this.#protocolVersion }, 'session re-established');
      this.#startListening();
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

  /** Keeps at most one GET listen stream open, reconnecting with bounded backoff. */
  #startListening(): void {
    // A server without sessions may still offer the GET stream; a 405 says it does not.
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
    let lastEventId: string | undefined;
    let backoffMs = LISTEN_BACKOFF_MIN_MS;
    while (!signal.aborted && !this.#closed) {
      let retryMs: number | undefined;
      let delivered = false;
      try {
        const headers = this.headers();
        if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
        const exchange = await endpoint.get(headers, signal);
        if (exchange.status === 405) {
          await exchange.body.dump();
          logger.debug('the server offers no listen stream (405)');
          return;
        }
        const refused = exchange.status === 404 || exchange.status === 400 ? await readErrorBody(exchange) : undefined;
        if (headers['mcp-session-id'] !== undefined && (exchange.status === 404 || (refused !== undefined && saysSessionUnknown(refused)))) {
          // The session is gone (404, or a 400 that says so): heal it; a fresh listen stream opens then.
          void this.heal(headers['mcp-session-id']).catch(() => undefined);
          return;
        }
        if (exchange.status !== 200 || mediaTypeOf(exchange.headers) !== 'text/event-stream') {
          const text = refused ?? (await readErrorBody(exchange));
          logger.warn({ status: exchange.status, body: text.slice(0, 200) }, 'listen stream refused');
        } else {
          logger.debug('listen stream open');
          for await (const item of readStreamItems(exchange, {
            maxMessageBytes: this.#options.maxMessageBytes,
            idleTimeoutMs: 0,
            onRetry: (ms) => (retryMs = ms),
          })) {
            delivered = true;
            backoffMs = LISTEN_BACKOFF_MIN_MS;
            if (item.eventId !== undefined) lastEventId = item.eventId;
            if (isJsonObject(item.message)) await this.#options.onServerMessage(item.message, item.data !== undefined && isSingleLine(item.data) ? item.data : undefined);
            else if (item.unparsed === true) logger.warn({ data: item.data?.slice(0, 200) }, 'listen stream event is not JSON; skipped');
          }
          logger.debug('listen stream ended');
        }
      } catch (error) {
        if (signal.aborted) return;
        logger.debug({ err: String(error) }, 'listen stream failed');
      }
      // `retry` is honoured after a stream that delivered events; one that delivered nothing waits at
      // least the backoff, so a server that ends every stream at once (`retry: 0`) is no busy loop.
      const retry = retryMs === undefined ? undefined : Math.min(retryMs, MAX_RETRY_DELAY_MS);
      const delay = retry !== undefined && delivered ? retry : Math.max(retry ?? 0, backoffMs);
      backoffMs = Math.min(backoffMs * 2, LISTEN_BACKOFF_MAX_MS);
      await sleep(delay, undefined, { signal }).catch(() => undefined);
    }
  }
}
