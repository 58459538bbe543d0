// Posts each checked message to the endpoint and retries where that is safe, until it has its one answer.

import { isUtf8 } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BridgeConfig } from '../config/config.js';
import type { Endpoint } from '../http/endpoint.js';
import type { EraProtocol } from '../eras/era.js';
import { BridgeError, isBridgeError } from '../core/errors.js';
import { followRequestStream, withStatus } from '../transports/stream-follower.js';
import { type InFlight, type PendingRequest } from './in-flight.js';
import { DeadlineList } from '../core/deadlines.js';
import {
  classifyServerMessage,
  errorReply,
  isJsonObject,
  isSingleLine,
  modernVersionOf,
  toLoggedId,
  type IncomingMessage,
  type JsonObject,
  type RequestBody,
} from '../core/json-rpc.js';
import type { LegacySession } from '../eras/legacy-session.js';
import type { Logger } from '../logging/logger.js';
import { HEADER_MISMATCH, type ModernEra } from '../eras/modern-era.js';
import { arrivedJsonLine, readReply, releaseArrived, type Reply, type StreamItem } from '../http/reply-reader.js';
import { malformedResponse, type Router } from './router.js';
import { REDIRECT_HINT } from '../http/redirects.js';
import { maskUrl, type Redactor } from '../logging/redactor.js';
import { statusError } from '../http/status-errors.js';
import type { ToolFilter } from './tool-filter.js';
import { Aborts, CANCELLED, untilAborted, type AbortSource } from '../core/abort.js';
import { type HttpExchange } from '../http/send.js';
import { mediaTypeOf, retryAfterMs } from '../http/header-values.js';
import { excerptOf, singleLineBytes } from '../http/body-text.js';

/** Retries of a request that provably never left (connection refused, DNS), and their delays. */
export const NEVER_SENT_RETRY_DELAYS_MS = [200, 800] as const;
/** Retries after 429/503 with Retry-After, and the longest single wait honoured. */
export const RATE_LIMIT_RETRIES = 3;
export const MAX_RETRY_AFTER_MS = 30_000;
/** Bound on posting a notification or response when requests have no deadline (`--request-timeout 0`). */
export const NOTIFICATION_TIMEOUT_MS = 60_000;

export interface ForwarderDeps {
  config: BridgeConfig;
  endpoint: Endpoint;
  legacy: LegacySession;
  modern: ModernEra;
  inFlight: InFlight;
  router: Router;
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  /** Back-pressure from stdout: reading a reply waits while this returns a promise. */
  room: () => Promise<void> | undefined;
  logger: Logger;
  redact: Redactor;
  /** --allow-tools / --deny-tools: a call to a hidden tool is answered here, never posted. */
  toolFilter?: ToolFilter | undefined;
  /**
   * --transport auto: asked about a POST refused without a JSON-RPC answer, before its error is
   * thrown. A promise of true when another transport took the request over (and answers it);
   * undefined when no fallback applies.
   */
  fallback?: ((pending: PendingRequest, body: RequestBody, reply: Extract<Reply, { kind: 'http-error' }>) => Promise<boolean> | undefined) | undefined;
}

/** The deadlines of posted notifications and responses, on one timer. */
const postDeadlines = new DeadlineList();

/**
 * Methods whose result the bridge itself reads before the client sees it: a 2025 initialize (the
 * negotiated version, legacy-session.ts), tools/list (the --allow-tools/--deny-tools filter and
 * the 2026-07-28 x-mcp-header schemas, tool-filter.ts and modern-era.ts) and server/discover
 * (the era translator's choice of era). Their JSON replies are parsed whole at any size; other
 * large replies are scanned and forwarded as the server's bytes. A reader not named here still
 * gets the right value (a scanned reply decodes itself when read), only without the saving.
 */
export const RESULT_READ_BY_BRIDGE: ReadonlySet<string> = new Set(['initialize', 'tools/list', 'server/discover']);

/** A protocol version may only be sent as given; one that cannot be a header value is refused locally. */
const SAFE_VERSION = /^[\x21-\x7e]{1,64}$/;

/** Which of the once-per-message retries a message has used. */
interface Recoveries {
  healed: boolean;
  renewed: boolean;
}

export class Forwarder {
  readonly #deps: ForwarderDeps;

  constructor(deps: ForwarderDeps) {
    this.#deps = deps;
  }

  /** The era is a property of the body (a 2026-07-28 request names its version in `_meta`). */
  #eraOf(message: JsonObject): EraProtocol {
    return modernVersionOf(message) === undefined ? this.#deps.legacy : this.#deps.modern;
  }

  /** Sends a request read from stdin; its one reply is written whatever happens. */
  async forwardRequest(incoming: Extract<IncomingMessage, { kind: 'request' }>): Promise<void> {
    const { inFlight, legacy, logger } = this.#deps;
    const { id, method, message } = incoming;
    const era = this.#eraOf(message);
    // subscriptions/listen stays open for hours by design (2026-07-28 subscriptions): no deadline.
    const pending = inFlight.begin(id, method, era.name, { deadline: method !== 'subscriptions/listen' });
    if (pending === undefined) {
      await this.#deps.write(
        errorReply(id, -32600, 'Invalid Request: this id is already used by a request that is still outstanding', { bridgeCode: 'INVALID_REQUEST' }),
      );
      return;
    }
    const modernVersion = modernVersionOf(message);
    if (modernVersion !== undefined && !SAFE_VERSION.test(modernVersion)) {
      await pending.settle(
        errorReply(id, -32600, 'Invalid Request: the protocol version in _meta is not a valid header value', { bridgeCode: 'INVALID_REQUEST' }),
      );
      return;
    }
    const hidden = this.#deps.toolFilter?.refusal(method, message);
    if (hidden !== undefined) {
      logger.info({ id: toLoggedId(id), tool: hidden.context.tool, filter: hidden.context.filter }, 'tools/call to a filtered tool answered by the bridge');
      await pending.fail(hidden);
      return;
    }
    const debug = logger.isLevelEnabled('debug');
    const started = debug ? performance.now() : 0;
    const isInitialize = era === legacy && method === 'initialize';
    let status: number | undefined;
    try {
      if (isInitialize) {
        legacy.beginInitialize(isJsonObject(message.params) ? message.params : {});
      } else {
        const ready = era.ready();
        if (ready !== undefined) await untilAborted(ready, pending.aborts);
      }
      // Raced against the request's signal: a deadline or cancel ends this task at once, whatever
      // undici, a decoder or the server do with the exchange meanwhile.
      status = await untilAborted(this.#exchange(pending, era, message, incoming.body), pending.aborts);
    } catch (error) {
      if (!pending.done) {
        const failure = this.#failureOf(error, pending.aborts);
        status = failure.context.status;
        logger.warn({ method, id: toLoggedId(id), code: failure.code, status: failure.context.status, hint: failure.context.hint }, failure.message);
        await pending.fail(failure);
      }
    } finally {
      // The exactly-once promise does not rest on every path above being right: a request that
      // somehow has no reply by now gets one.
      if (!pending.done) await pending.fail(new BridgeError('INTERNAL', `the bridge finished ${method} without an answer`));
      if (isInitialize) legacy.endInitialize();
      if (debug)
        logger.debug(
          { method, id: toLoggedId(id), status, cancelled: pending.cancelled || undefined, ms: Math.round(performance.now() - started) },
          'request done',
        );
    }
  }

  /** Posts a notification or a response (answer to a server request); failures are only logged. */
  async forwardOther(incoming: Exclude<IncomingMessage, { kind: 'request' }>): Promise<void> {
    const { legacy, logger, inFlight } = this.#deps;
    const method = incoming.kind === 'notification' ? incoming.method : undefined;
    if (method === 'notifications/cancelled') {
      const params = incoming.message.params;
      const requestId = isJsonObject(params) ? params.requestId : undefined;
      const target = typeof requestId === 'string' || typeof requestId === 'number' ? inFlight.get(requestId) : undefined;
      if (target !== undefined) {
        inFlight.cancel(target.id);
        logger.debug({ id: toLoggedId(target.id), era: target.era }, 'request cancelled by the client');
        // 2026-07-28: closing the stream IS the cancellation; the notification is not sent over HTTP
        // (transports §Cancellation). 2025: cancellation is explicit, so it is posted.
        if (target.era === 'modern') return;
      } else if (modernVersionOf(incoming.message) !== undefined || !legacy.established) {
        logger.debug({ requestId: toLoggedId(requestId) }, 'cancel for a request that is not outstanding; nothing to do');
        return;
      }
    }
    const era = this.#eraOf(incoming.message);
    const label = method ?? '(response)';
    // A deadline on the shared list, removed when the post is done: no timer or AbortController
    // per message (AbortSignal.timeout() would even keep each one alive for its whole timeout).
    const aborts = new Aborts();
    const timeoutMs = this.#deps.config.requestTimeoutMs || NOTIFICATION_TIMEOUT_MS;
    const deadline = postDeadlines.add(timeoutMs, () =>
      aborts.abort(new BridgeError('REQUEST_TIMEOUT', `the server did not take ${label} within ${timeoutMs} ms`, { timeoutMs })),
    );
    try {
      const ready = era.ready();
      if (ready !== undefined) await untilAborted(ready, aborts);
      const recoveries: Recoveries = { healed: false, renewed: false };
      for (;;) {
        const headers = era.headersFor(incoming.message, method);
        let sent: string | undefined;
        const reply = await untilAborted(
          this.#deps.endpoint.post(incoming.body, headers, aborts).then((exchange) => {
            sent = exchange.sentAuthorization;
            return readReply(exchange, { maxMessageBytes: this.#deps.config.maxMessageBytes, signal: aborts, acceptAny2xx: true });
          }),
          aborts,
        );
        if (await this.#recover(reply, headers, era, recoveries, sent, aborts, aborts.signal)) continue;
        if (reply.kind === 'accepted') {
          era.onAccepted(method);
          if (logger.isLevelEnabled('debug')) logger.debug({ method: label, status: reply.status }, 'message accepted');
        } else {
          const body = reply.kind === 'http-error' ? excerptOf(this.#deps.redact(reply.text)) : undefined;
          logger.warn({ method: label, status: reply.status, body }, 'the server did not accept the message');
        }
        return;
      }
    } catch (error) {
      const failure = this.#failureOf(error, aborts);
      logger.warn({ method: label, code: failure.code, hint: failure.context.hint }, failure.message);
    } finally {
      postDeadlines.remove(deadline);
    }
  }

  /** Posts the request (again where that is safe) until it is answered; resolves with the final HTTP status. */
  async #exchange(pending: PendingRequest, era: EraProtocol, message: JsonObject, body: RequestBody): Promise<number> {
    const signal = pending.aborts;
    let rateLimitRetries = 0;
    const recoveries: Recoveries = { healed: false, renewed: false };
    let toolsRefreshed = false;
    for (;;) {
      const headers = era.headersFor(message, pending.method);
      const exchange = await this.#post(pending, era, body, headers);
      // Already answered from its whole body the moment it arrived (#answerOnArrival): nothing to read.
      if (exchange.answeredOnArrival === true) return exchange.status;
      if (exchange.status >= 200 && exchange.status < 300 && mediaTypeOf(exchange.headers) === 'text/event-stream') {
        await this.#followStream(pending, era, exchange);
        return exchange.status;
      }
      const scanLarge = !RESULT_READ_BY_BRIDGE.has(pending.method);
      const reply = await readReply(exchange, { maxMessageBytes: this.#deps.config.maxMessageBytes, signal, room: this.#deps.room, scanLarge }).catch(
        (error: unknown) => {
          throw withStatus(this.#failureOf(error, signal), exchange.status);
        },
      );
      if (reply.kind === 'json') {
        await this.#deliverJson(pending, era, exchange, reply);
        return exchange.status;
      }
      if (reply.kind !== 'http-error') throw this.#unusable(pending.method, reply);
      const renewedBefore = recoveries.renewed;
      if (await this.#recover(reply, headers, era, recoveries, exchange.sentAuthorization, signal, pending.signal)) continue;
      // A second refusal of a fresh credential is the answer (which the credential may explain: a
      // token its authorization server has just issued is a failed sign-in).
      if (renewedBefore && refusesCredential(reply)) {
        const refusal = this.#deps.endpoint.credential.refusedAfterRenewal?.({
          status: reply.status as 401 | 403,
          wwwAuthenticate: reply.wwwAuthenticate,
          sent: exchange.sentAuthorization,
        });
        if (refusal !== undefined) throw refusal;
      }
      const waitMs = retryAfterMs(exchange.headers);
      // A wait that would outlast the request deadline is not started: the 429/503 is the answer
      // now, rather than a REQUEST_TIMEOUT later that hides what the server said.
      const beforeDeadline = pending.deadlineAt === undefined || performance.now() + (waitMs ?? 0) < pending.deadlineAt;
      if (
        (reply.status === 429 || reply.status === 503) &&
        waitMs !== undefined &&
        rateLimitRetries < RATE_LIMIT_RETRIES &&
        waitMs <= MAX_RETRY_AFTER_MS &&
        beforeDeadline
      ) {
        rateLimitRetries++;
        this.#deps.logger.info({ id: toLoggedId(pending.id), status: reply.status, waitMs }, 'server asked to retry later; waiting');
        await sleep(waitMs, undefined, { signal: pending.signal });
        continue;
      }
      const parsed = reply.parsed;
      // A JSON-RPC error for this very id is the server's answer: forwarded unchanged, so 2026
      // clients see -32020/-32021/-32022 and -32601 and can renegotiate.
      if (isJsonObject(parsed) && parsed.jsonrpc === '2.0' && parsed.id === pending.id && isJsonObject(parsed.error) && !('result' in parsed)) {
        if (parsed.error.code === HEADER_MISMATCH && era === this.#deps.modern && pending.method === 'tools/call' && !toolsRefreshed) {
          toolsRefreshed = true;
          if (await this.#refreshTools(pending, message)) continue;
        }
        await this.#deps.router.deliver(pending, parsed, era, exchange);
        return exchange.status;
      }
      if (pending.method === 'server/discover' && saysNoDiscover(reply.status, parsed)) {
        // Clients probe with server/discover before falling back to initialize; a 2025 server
        // refuses it with a 4xx. That is expected, not worth a warning, and an error that is not a
        // 2026 one makes the client fall back at once (2026-07-28 transports §Backward Compatibility).
        this.#deps.logger.debug({ id: toLoggedId(pending.id), status: reply.status }, 'server/discover refused: a 2025-era server');
        await pending.fail(
          new BridgeError(
            'METHOD_NOT_FOUND',
            'Method not found: the server does not offer server/discover (it speaks a 2025 protocol revision: use initialize)',
            {
              status: reply.status,
              bodyExcerpt: excerptOf(this.#deps.redact(reply.text)),
            },
          ),
        );
        return exchange.status;
      }
      const fallback = this.#deps.fallback?.(pending, body, reply);
      if (fallback !== undefined && (await fallback)) return exchange.status;
      throw statusError(pending.method, exchange, {
        url: this.#deps.endpoint.url,
        transport: this.#deps.config.transport,
        body: reply.text,
        parsed,
        redact: this.#deps.redact,
        tokenSource: this.#deps.endpoint.credential.source === 'none' ? this.#deps.config.tokenSource : this.#deps.endpoint.credential.source,
        tokenSet: exchange.sentAuthorization !== undefined,
        tokenEnv: this.#deps.config.tokenEnv,
        hadSession: this.#deps.legacy.sessionId !== undefined,
        beforeInitialize: era === this.#deps.legacy && !this.#deps.legacy.established && pending.method !== 'initialize',
      });
    }
  }

  /**
   * Asks the credential for another after the server refused the one sent; true when the request
   * should go once more (a 401 means it was not processed). A failed renewal rejects with its error.
   */
  /**
   * The retries every POST may take, a request's or a notification's, each at most once per
   * message: an expired 2025 session is re-initialised (2025-11-25 transports §Session Management:
   * a 404 to a request with a session id means start a new session), a refused credential renewed.
   * True when the message is to be posted again.
   */
  async #recover(
    reply: Reply,
    headers: Record<string, string>,
    era: EraProtocol,
    recoveries: Recoveries,
    sent: string | undefined,
    aborts: AbortSource,
    signal: AbortSignal,
  ): Promise<boolean> {
    if (!recoveries.healed && era.isExpired(reply, headers)) {
      recoveries.healed = true;
      await untilAborted(era.heal(headers), aborts);
      return true;
    }
    if (!recoveries.renewed && reply.kind === 'http-error' && refusesCredential(reply)) {
      recoveries.renewed = true;
      return untilAborted(this.#renew(reply, sent, signal), aborts);
    }
    return false;
  }

  #renew(reply: Extract<Reply, { kind: 'http-error' }>, sent: string | undefined, signal: AbortSignal): Promise<boolean> {
    const challenge = { status: reply.status as 401 | 403, wwwAuthenticate: reply.wwwAuthenticate, sent };
    this.#deps.logger.debug({ status: reply.status }, 'the server refused the credential; renewing it');
    return this.#deps.endpoint.credential.renew(challenge, signal);
  }

  /** One POST; a request that provably never reached the server (refused, DNS) is sent again, twice at most. */
  async #post(pending: PendingRequest, era: EraProtocol, body: RequestBody, headers: Record<string, string>): Promise<HttpExchange> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#deps.endpoint.post(
          body,
          headers,
          pending.aborts,
          RESULT_READ_BY_BRIDGE.has(pending.method) ? undefined : (exchange) => this.#answerOnArrival(pending, era, exchange),
        );
      } catch (error) {
        const failure = this.#failureOf(error, pending.aborts);
        const delay = NEVER_SENT_RETRY_DELAYS_MS[attempt];
        if (failure.context.neverSent !== true || delay === undefined) throw failure;
        this.#deps.logger.debug({ id: toLoggedId(pending.id), delay, code: failure.code }, 'connection failed before sending; retrying');
        await sleep(delay, undefined, { signal: pending.signal });
      }
    }
  }

  /**
   * Answers the request the moment its last byte arrived, from undici's callback, when the reply is
   * a small whole JSON line answering this very request (arrivedJsonLine): delivered as #deliverJson
   * would deliver it, without waiting for the promise chain to get there. The exchange is marked, so
   * that chain only passes it on (cookies, redirects) and reads nothing again. Methods whose result
   * the bridge reads or rewrites never come here.
   */
  #answerOnArrival(pending: PendingRequest, era: EraProtocol, exchange: HttpExchange): void {
    if (pending.done) return;
    const arrived = arrivedJsonLine(exchange, this.#deps.config.maxMessageBytes);
    if (arrived === undefined) return;
    const routed = classifyServerMessage(arrived.value);
    if (routed?.kind !== 'response' || routed.id !== pending.id) return;
    exchange.answeredOnArrival = true;
    releaseArrived(exchange);
    this.#deps.router
      .deliver(pending, routed.message, era, exchange, arrived.line)
      .catch((error: unknown) => this.#deps.logger.error({ err: error instanceof Error ? error.stack : String(error) }, 'internal error'));
  }

  /** Reads the POST's event stream: other messages pass through as they arrive, the response ends it. */
  #followStream(pending: PendingRequest, era: EraProtocol, first: HttpExchange): Promise<void> {
    const isListen = pending.method === 'subscriptions/listen';
    return followRequestStream({
      pending,
      first,
      read: { maxMessageBytes: this.#deps.config.maxMessageBytes, room: this.#deps.room, scanLarge: !RESULT_READ_BY_BRIDGE.has(pending.method) },
      idleTimeoutMs: isListen ? 0 : this.#deps.config.streamIdleTimeoutMs,
      resumable: era === this.#deps.legacy,
      onMessage: (item) => this.#onStreamMessage(pending, era, first, item),
      resume: (lastEventId, signal) => this.#deps.endpoint.get({ ...this.#deps.legacy.headers(), 'last-event-id': lastEventId }, signal),
      failure: (error, signal) => this.#failureOf(error, signal),
      logger: this.#deps.logger,
    });
  }

  async #onStreamMessage(pending: PendingRequest, era: EraProtocol, first: HttpExchange, item: StreamItem): Promise<'continue' | 'answered'> {
    // A large event's line arrives as the server's bytes (proven one line of UTF-8 JSON), a small one as text.
    const serialised = item.bytes ?? (item.data !== undefined && isSingleLine(item.data) ? item.data : undefined);
    const routed = classifyServerMessage(item.message);
    if (routed?.kind === 'response' && routed.id === pending.id) {
      await this.#deps.router.deliver(pending, routed.message, era, first, serialised);
      return 'answered';
    }
    if (routed?.kind === 'malformed-response' && routed.id === pending.id) {
      await pending.fail(withStatus(malformedResponse(), first.status));
      return 'answered';
    }
    await this.#deps.router.route(item.message, serialised, pending);
    return 'continue';
  }

  async #deliverJson(pending: PendingRequest, era: EraProtocol, exchange: HttpExchange, reply: Extract<Reply, { kind: 'json' }>): Promise<void> {
    const { value, bytes } = reply;
    const bad = (message: string, hint?: string) =>
      new BridgeError('REMOTE_BAD_REPLY', message, {
        status: exchange.status,
        bodyExcerpt: excerptOf(this.#deps.redact(bytes.subarray(0, 4096).toString('utf8'))),
        ...(hint === undefined ? {} : { hint }),
      });
    if (value === undefined)
      throw bad('the server said application/json but the body is not JSON', 'a proxy or gateway may have answered instead of the MCP server');
    if (Array.isArray(value)) throw bad('the server answered with a JSON array; MCP (since 2025-06-18) allows one message per reply');
    const routed = classifyServerMessage(value);
    if (routed?.kind === 'malformed-response' && routed.id === pending.id) throw withStatus(malformedResponse(), exchange.status);
    if (routed?.kind === 'response' && routed.id === pending.id) {
      // Valid UTF-8 on one line: the server's bytes go to stdout as they are (a scanned reply was
      // proven so while it was read).
      const line = reply.line ?? singleLineBytes(bytes);
      const asSent = reply.line !== undefined || (line !== undefined && isUtf8(line));
      await this.#deps.router.deliver(pending, routed.message, era, exchange, asSent ? line : undefined);
      return;
    }
    this.#deps.logger.warn(
      { id: toLoggedId(pending.id), got: toLoggedId(isJsonObject(value) ? value.id : undefined) },
      'the JSON reply is not the response to this request; dropped',
    );
    throw bad('the server replied with a message that is not the response to this request');
  }

  /** After a -32020, refetches tools/list for the retry; false when that failed and the -32020 is the answer. */
  async #refreshTools(pending: PendingRequest, call: JsonObject): Promise<boolean> {
    try {
      await this.#deps.modern.refreshTools(call, pending.signal);
      this.#deps.logger.info({ id: toLoggedId(pending.id) }, 'HeaderMismatch (-32020): tools/list refreshed; retrying once');
      return true;
    } catch (error) {
      // A cancel or deadline stops here; any other failure of the bridge's own tools/list must
      // not replace the server's answer: the -32020 is forwarded so the client can recover.
      if (pending.signal.aborted) throw error;
      const failure = this.#failureOf(error, pending.signal);
      this.#deps.logger.warn(
        { id: toLoggedId(pending.id), code: failure.code, status: failure.context.status },
        `refreshing tools/list after a -32020 failed (${failure.message}); the -32020 is forwarded`,
      );
      return false;
    }
  }

  /** A 2xx that answers nothing, a redirect, or a body of the wrong type. */
  #unusable(method: string, reply: Exclude<Reply, { kind: 'json' | 'http-error' }>): BridgeError {
    const { status } = reply;
    switch (reply.kind) {
      case 'redirect': {
        // A Location may carry a signed query or credentials: shown with its values masked.
        const location =
          reply.location === undefined
            ? undefined
            : maskUrl(URL.canParse(reply.location, this.#deps.endpoint.url.href) ? new URL(reply.location, this.#deps.endpoint.url) : reply.location);
        return new BridgeError(
          'REDIRECT_REFUSED',
          `the server redirected ${method} (${status}) to ${location ?? '(no Location)'}; the bridge follows only a 307 or 308 to the same origin`,
          {
            status,
            ...(location === undefined ? {} : { location }),
            hint: REDIRECT_HINT,
          },
        );
      }
      case 'unexpected-type':
        return new BridgeError('REMOTE_BAD_REPLY', `the server answered with content type ${reply.type ?? '(none)'}, not JSON or an event stream`, {
          status,
          bodyExcerpt: excerptOf(this.#deps.redact(reply.text)),
          hint: 'this URL may not be an MCP endpoint: check --url',
        });
      default:
        return new BridgeError('REMOTE_BAD_REPLY', `the server accepted ${method} with ${status} but sent no answer`, {
          status,
          hint: 'a request needs a JSON or event-stream reply; the server may not speak MCP Streamable HTTP',
        });
    }
  }

  #failureOf(error: unknown, signal: AbortSource | undefined): BridgeError {
    if (signal?.aborted === true && signal.reason === CANCELLED) {
      return new BridgeError('INTERNAL', 'cancelled');
    }
    if (isBridgeError(error)) return error;
    return this.#deps.endpoint.failure(error, signal);
  }
}

/**
 * A refusal a new credential may cure: 401, or 403 with `error="insufficient_scope"` (step-up,
 * authorization §Scope Challenge Handling; RFC 6750 §3.1).
 */
export function refusesCredential(reply: Extract<Reply, { kind: 'http-error' }>): boolean {
  if (reply.status === 401) return true;
  return reply.status === 403 && reply.wwwAuthenticate !== undefined && /\berror\s*=\s*"?insufficient_scope"?/i.test(reply.wwwAuthenticate);
}

/** JSON-RPC codes only a 2026-07-28 server sends: a server/discover refused with one is not a 2025 server. */
const MODERN_ERROR_CODES = new Set([-32020, -32021, -32022]);

/** A 4xx to server/discover that says "not this era", not "not allowed" (401/403) or a 2026 error. */
function saysNoDiscover(status: number, parsed: unknown): boolean {
  if (status < 400 || status >= 500 || status === 401 || status === 403) return false;
  const code = isJsonObject(parsed) && isJsonObject(parsed.error) ? parsed.error.code : undefined;
  return typeof code !== 'number' || !MODERN_ERROR_CODES.has(code);
}
