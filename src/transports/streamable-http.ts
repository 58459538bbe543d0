// The Streamable HTTP transport (2025 sessions and 2026-07-28): each message POSTed to the one endpoint, retried where that cannot repeat work, its JSON or event-stream reply read to the response.

import { isUtf8 } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BridgeConfig } from '../config/config.js';
import type { Endpoint } from '../http/endpoint.js';
import type { EraProtocol } from '../eras/era.js';
import { BridgeError } from '../core/errors.js';
import { followRequestStream, withStatus } from './stream-follower.js';
import { classifyServerMessage, isJsonObject, isSingleLine, modernVersionOf, toLoggedId, type JsonObject, type RequestBody } from '../core/json-rpc.js';
import type { EarlyRefusal } from '../core/json-scan.js';
import type { LegacySession } from '../eras/legacy-session.js';
import type { Logger } from '../logging/logger.js';
import { HEADER_MISMATCH, type ModernEra } from '../eras/modern-era.js';
import { arrivedJsonLine, arrivedStreamItems, readReply, releaseArrived, type Reply, type StreamItem } from '../http/reply-reader.js';
import { REDIRECT_HINT } from '../http/redirects.js';
import { maskUrl, type Redactor } from '../logging/redactor.js';
import { refusesCredential, statusError } from '../http/status-errors.js';
import { untilAborted, type Aborts, type AbortSource } from '../core/abort.js';
import { type HttpExchange } from '../http/send.js';
import { mediaTypeOf, retryAfterMs } from '../http/header-values.js';
import { singleLineBytes } from '../http/body-text.js';
import { excerptOf } from '../logging/outgoing-text.js';
import {
  isResponseTo,
  malformedResponse,
  RefusedPost,
  type OtherMessage,
  type RegisteredRequest,
  type RequestMessage,
  type ServerMessageSink,
  type Transport,
} from './transport.js';

/** Retries of a request that provably never left (connection refused, DNS), and their delays. */
export const NEVER_SENT_RETRY_DELAYS_MS = [200, 800] as const;
/** Retries after 429/503 with Retry-After, and the longest single wait honoured. */
export const RATE_LIMIT_RETRIES = 3;
export const MAX_RETRY_AFTER_MS = 30_000;

export interface StreamableHttpDeps {
  config: BridgeConfig;
  endpoint: Endpoint;
  legacy: LegacySession;
  modern: ModernEra;
  sink: ServerMessageSink;
  /** Back-pressure from stdout: reading a reply waits while this returns a promise. */
  room: () => Promise<void> | undefined;
  logger: Logger;
  redact: Redactor;
}

/**
 * Methods whose result the bridge itself reads before the client sees it: a 2025 initialize (the
 * negotiated version, legacy-session.ts), tools/list (the --allow-tools/--deny-tools filter and
 * the 2026-07-28 x-mcp-header schemas, tool-filter.ts and modern-era.ts) and server/discover
 * (the era translator's choice of era). Their JSON replies are parsed whole at any size; other
 * large replies are scanned and forwarded as the server's bytes. A reader not named here still
 * gets the right value (a scanned reply decodes itself when read), only without the saving.
 */
export const RESULT_READ_BY_BRIDGE: ReadonlySet<string> = new Set(['initialize', 'tools/list', 'server/discover']);

/** Which of the once-per-message retries a message has used. */
interface Recoveries {
  healed: boolean;
  renewed: boolean;
}

export class StreamableHttpTransport implements Transport {
  readonly #deps: StreamableHttpDeps;

  constructor(deps: StreamableHttpDeps) {
    this.#deps = deps;
  }

  /** The era is a property of the body (a 2026-07-28 request names its version in `_meta`). */
  #eraOf(message: JsonObject): EraProtocol {
    return modernVersionOf(message) === undefined ? this.#deps.legacy : this.#deps.modern;
  }

  // Not an async function: a request of an era that is ready (nearly every one) goes straight to
  // #exchange, without a promise and an async frame of its own on the way.
  request(request: RegisteredRequest, incoming: RequestMessage): Promise<void> {
    const { message } = incoming;
    const era = this.#eraOf(message);
    if (era === this.#deps.legacy && request.method === 'initialize') return this.#initialize(request, incoming);
    const ready = era.ready();
    if (ready !== undefined) {
      return untilAborted(ready, request.aborts).then(() => this.#exchange(request, era, message, incoming.body, incoming.refuseEarly));
    }
    return this.#exchange(request, era, message, incoming.body, incoming.refuseEarly);
  }

  /** A 2025 initialize: the session it opens is begun before it is posted and ended after, whatever happens. */
  async #initialize(request: RegisteredRequest, incoming: RequestMessage): Promise<void> {
    const { legacy } = this.#deps;
    const { message } = incoming;
    try {
      legacy.beginInitialize(isJsonObject(message.params) ? message.params : {});
      await this.#exchange(request, legacy, message, incoming.body, incoming.refuseEarly);
    } finally {
      legacy.endInitialize();
    }
  }

  async post(incoming: OtherMessage, aborts: Aborts, cancelled: RegisteredRequest | undefined): Promise<void> {
    const { legacy, logger } = this.#deps;
    const method = incoming.kind === 'notification' ? incoming.method : undefined;
    if (method === 'notifications/cancelled') {
      // 2026-07-28: closing the stream IS the cancellation; the notification is not sent over HTTP
      // (transports §Cancellation). 2025: cancellation is explicit, so it is posted.
      if (cancelled?.era === 'modern') return;
      if (cancelled === undefined && (modernVersionOf(incoming.message) !== undefined || !legacy.established)) {
        logger.debug('cancel for a request that is not outstanding; nothing to do');
        return;
      }
    }
    const era = this.#eraOf(incoming.message);
    const label = method ?? '(response)';
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
        const body = reply.kind === 'http-error' ? excerptOf(reply.text, this.#deps.redact) : undefined;
        logger.warn({ method: label, status: reply.status, body }, 'the server did not accept the message');
      }
      return;
    }
  }

  /** Shutdown has begun: the session is kept alive no longer. */
  beginShutdown(): void {
    this.#deps.legacy.stopKeepAlive();
  }

  /** Ends the 2025 session, if one is open (its DELETE within `graceMs`). */
  close(graceMs: number): Promise<void> {
    return this.#deps.legacy.close(graceMs);
  }

  /** Posts the request (again where that is safe) until it is answered. */
  async #exchange(request: RegisteredRequest, era: EraProtocol, message: JsonObject, body: RequestBody, refuseEarly: EarlyRefusal | undefined): Promise<void> {
    const signal = request.aborts;
    let rateLimitRetries = 0;
    const recoveries: Recoveries = { healed: false, renewed: false };
    let toolsRefreshed = false;
    for (;;) {
      const headers = era.headersFor(message, request.method);
      const exchange = await this.#post(request, era, body, headers);
      // Already answered from its whole body the moment it arrived (#answerOnArrival): nothing to
      // read; an event stream's messages may still be on their way to the sink.
      if (exchange.answeredOnArrival === true) {
        if (exchange.arrivalDelivery !== undefined) await exchange.arrivalDelivery;
        return;
      }
      if (exchange.status >= 200 && exchange.status < 300 && mediaTypeOf(exchange.headers) === 'text/event-stream') {
        await this.#followStream(request, era, exchange, refuseEarly);
        return;
      }
      const scanLarge = !RESULT_READ_BY_BRIDGE.has(request.method);
      const reply = await readReply(exchange, {
        maxMessageBytes: this.#deps.config.maxMessageBytes,
        signal,
        room: this.#deps.room,
        scanLarge,
        refuseEarly,
      }).catch((error: unknown) => {
        throw withStatus(this.#deps.endpoint.failure(error, signal), exchange.status);
      });
      if (reply.kind === 'json') {
        await this.#deliverJson(request, era, exchange, reply);
        return;
      }
      if (reply.kind !== 'http-error') throw this.#unusable(request.method, reply);
      const renewedBefore = recoveries.renewed;
      if (await this.#recover(reply, headers, era, recoveries, exchange.sentAuthorization, signal, request.signal)) continue;
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
      const beforeDeadline = request.deadlineAt === undefined || performance.now() + (waitMs ?? 0) < request.deadlineAt;
      if (
        (reply.status === 429 || reply.status === 503) &&
        waitMs !== undefined &&
        rateLimitRetries < RATE_LIMIT_RETRIES &&
        waitMs <= MAX_RETRY_AFTER_MS &&
        beforeDeadline
      ) {
        rateLimitRetries++;
        this.#deps.logger.info({ id: toLoggedId(request.id), status: reply.status, waitMs }, 'server asked to retry later; waiting');
        await sleep(waitMs, undefined, { signal: request.signal });
        continue;
      }
      const parsed = reply.parsed;
      // A JSON-RPC error for this very id is the server's answer: forwarded unchanged, so 2026
      // clients see -32020/-32021/-32022 and -32601 and can renegotiate.
      const routed = classifyServerMessage(parsed);
      if (routed?.kind === 'response' && isResponseTo(routed, request) && isJsonObject(routed.message.error)) {
        if (routed.message.error.code === HEADER_MISMATCH && era === this.#deps.modern && request.method === 'tools/call' && !toolsRefreshed) {
          toolsRefreshed = true;
          if (await this.#refreshTools(request, message)) continue;
        }
        await this.#answer(request, era, exchange, routed.message);
        return;
      }
      const failure = statusError(request.method, exchange, {
        url: this.#deps.endpoint.url,
        transport: this.#deps.config.transport,
        body: reply.text,
        parsed,
        redact: this.#deps.redact,
        ...this.#deps.endpoint.refusalContext(exchange),
        hadSession: this.#deps.legacy.sessionId !== undefined,
        beforeInitialize: era === this.#deps.legacy && !this.#deps.legacy.established && request.method !== 'initialize',
      });
      const notThisEra = request.method === 'server/discover' ? discoverRefusal(reply, this.#deps.redact) : undefined;
      throw new RefusedPost(notThisEra ?? failure, reply.status, parsed, notThisEra !== undefined);
    }
  }

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
      const challenge = { status: reply.status as 401 | 403, wwwAuthenticate: reply.wwwAuthenticate, sent };
      this.#deps.logger.debug({ status: reply.status }, 'the server refused the credential; renewing it');
      return untilAborted(this.#deps.endpoint.credential.renew(challenge, signal), aborts);
    }
    return false;
  }

  /** One POST; a request that provably never reached the server (refused, DNS) is sent again, twice at most. */
  async #post(request: RegisteredRequest, era: EraProtocol, body: RequestBody, headers: Record<string, string>): Promise<HttpExchange> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#deps.endpoint.post(
          body,
          headers,
          request.aborts,
          RESULT_READ_BY_BRIDGE.has(request.method) ? undefined : (exchange) => this.#answerOnArrival(request, era, exchange),
        );
      } catch (error) {
        const failure = this.#deps.endpoint.failure(error, request.aborts);
        const delay = NEVER_SENT_RETRY_DELAYS_MS[attempt];
        if (failure.context.neverSent !== true || delay === undefined) throw failure;
        this.#deps.logger.debug({ id: toLoggedId(request.id), delay, code: failure.code }, 'connection failed before sending; retrying');
        await sleep(delay, undefined, { signal: request.signal });
      }
    }
  }

  /** Hands the response to the sink after the era's bookkeeping (a 2025 session, 2026-07-28 header schemas). */
  #answer(request: RegisteredRequest, era: EraProtocol, exchange: HttpExchange | undefined, message: JsonObject, serialised?: string | Buffer): Promise<void> {
    return this.#deps.sink.answer(request, message, serialised, (shown) => era.onResponse(request.method, shown, exchange));
  }

  /**
   * Answers the request the moment its last byte arrived, from undici's callback, when the reply is
   * a small whole JSON line answering this very request (arrivedJsonLine): delivered as #deliverJson
   * would deliver it, without waiting for the promise chain to get there. The exchange is marked, so
   * that chain only passes it on (cookies, redirects) and reads nothing again. Methods whose result
   * the bridge reads or rewrites never come here.
   */
  #answerOnArrival(request: RegisteredRequest, era: EraProtocol, exchange: HttpExchange): void {
    if (request.done) return;
    if (mediaTypeOf(exchange.headers) === 'text/event-stream') {
      this.#answerStreamOnArrival(request, era, exchange);
      return;
    }
    const arrived = arrivedJsonLine(exchange, this.#deps.config.maxMessageBytes);
    if (arrived === undefined) return;
    const routed = classifyServerMessage(arrived.value);
    if (routed?.kind !== 'response' || !isResponseTo(routed, request)) return;
    exchange.answeredOnArrival = true;
    releaseArrived(exchange);
    this.#answer(request, era, exchange, routed.message, arrived.line).catch((error: unknown) =>
      this.#deps.logger.error({ err: error instanceof Error ? error.stack : String(error) }, 'internal error'),
    );
  }

  /**
   * The event-stream counterpart of #answerOnArrival: a small stream that arrived whole and holds
   * the response to this very request is handed on from undici's callback, each message before the
   * response routed as #followStream routes it, in order, then the response answered; the events
   * after it are dropped, as a stream read to its answer drops them. A stream without that response,
   * or with an event that is not JSON (which the reader logs), is left to #followStream.
   */
  #answerStreamOnArrival(request: RegisteredRequest, era: EraProtocol, exchange: HttpExchange): void {
    const items = arrivedStreamItems(exchange, this.#deps.config.maxMessageBytes);
    if (items === undefined) return;
    let answerAt = -1;
    for (let index = 0; index < items.length && answerAt < 0; index++) {
      const item = items[index]!;
      if (item.unparsed === true) return;
      if (item.message === undefined) continue;
      const routed = classifyServerMessage(item.message);
      if (routed !== undefined && isResponseTo(routed, request)) {
        if (routed.kind !== 'response') return;
        answerAt = index;
      }
    }
    if (answerAt < 0) return;
    exchange.answeredOnArrival = true;
    releaseArrived(exchange);
    const delivery = this.#deliverArrived(request, era, exchange, items, answerAt);
    // #exchange awaits it and meets its failure; should the exchange fail on the way there, the
    // request is answered for that failure and this one is not left unhandled.
    delivery.catch(() => undefined);
    exchange.arrivalDelivery = delivery;
  }

  /** Routes the messages before the response, then answers it: the order the stream gave them. */
  async #deliverArrived(request: RegisteredRequest, era: EraProtocol, exchange: HttpExchange, items: readonly StreamItem[], answerAt: number): Promise<void> {
    for (let index = 0; index < answerAt; index++) {
      const item = items[index]!;
      if (item.message !== undefined) await this.#deps.sink.route(item.message, serialisedOf(item), request);
    }
    const answer = items[answerAt]!;
    await this.#answer(request, era, exchange, answer.message as JsonObject, serialisedOf(answer));
  }

  /** Reads the POST's event stream: other messages pass through as they arrive, the response ends it. */
  async #followStream(request: RegisteredRequest, era: EraProtocol, first: HttpExchange, refuseEarly?: EarlyRefusal): Promise<void> {
    const isListen = request.method === 'subscriptions/listen';
    let malformed: BridgeError | undefined;
    await followRequestStream({
      pending: request,
      first,
      read: { maxMessageBytes: this.#deps.config.maxMessageBytes, room: this.#deps.room, scanLarge: !RESULT_READ_BY_BRIDGE.has(request.method), refuseEarly },
      idleTimeoutMs: isListen ? 0 : this.#deps.config.streamIdleTimeoutMs,
      redact: this.#deps.redact,
      resumable: era === this.#deps.legacy,
      onMessage: async (item: StreamItem): Promise<'continue' | 'answered'> => {
        const serialised = serialisedOf(item);
        const routed = classifyServerMessage(item.message);
        if (routed !== undefined && isResponseTo(routed, request)) {
          if (routed.kind === 'response') await this.#answer(request, era, first, routed.message, serialised);
          else malformed = withStatus(malformedResponse(), first.status);
          return 'answered';
        }
        await this.#deps.sink.route(item.message, serialised, request);
        return 'continue';
      },
      resume: (lastEventId, signal) => this.#deps.endpoint.get({ ...this.#deps.legacy.headers(), 'last-event-id': lastEventId }, signal),
      failure: (error, signal) => this.#deps.endpoint.failure(error, signal),
      logger: this.#deps.logger,
    });
    if (malformed !== undefined) throw malformed;
  }

  async #deliverJson(request: RegisteredRequest, era: EraProtocol, exchange: HttpExchange, reply: Extract<Reply, { kind: 'json' }>): Promise<void> {
    const { value, bytes } = reply;
    const bad = (message: string, hint?: string) =>
      new BridgeError('REMOTE_BAD_REPLY', message, {
        status: exchange.status,
        bodyExcerpt: excerptOf(bytes.toString('utf8'), this.#deps.redact),
        ...(hint === undefined ? {} : { hint }),
      });
    if (value === undefined)
      throw bad('the server said application/json but the body is not JSON', 'a proxy or gateway may have answered instead of the MCP server');
    if (Array.isArray(value)) throw bad('the server answered with a JSON array; MCP (since 2025-06-18) allows one message per reply');
    const routed = classifyServerMessage(value);
    if (routed !== undefined && isResponseTo(routed, request)) {
      if (routed.kind !== 'response') throw withStatus(malformedResponse(), exchange.status);
      // Valid UTF-8 on one line: the server's bytes go to stdout as they are (a scanned reply was
      // proven so while it was read).
      const line = reply.line ?? singleLineBytes(bytes);
      const asSent = reply.line !== undefined || (line !== undefined && isUtf8(line));
      await this.#answer(request, era, exchange, routed.message, asSent ? line : undefined);
      return;
    }
    this.#deps.logger.warn(
      { id: toLoggedId(request.id), got: toLoggedId(isJsonObject(value) ? value.id : undefined) },
      'the JSON reply is not the response to this request; dropped',
    );
    throw bad('the server replied with a message that is not the response to this request');
  }

  /** After a -32020, refetches tools/list for the retry; false when that failed and the -32020 is the answer. */
  async #refreshTools(request: RegisteredRequest, call: JsonObject): Promise<boolean> {
    try {
      await this.#deps.modern.refreshTools(call, request.signal);
      this.#deps.logger.info({ id: toLoggedId(request.id) }, 'HeaderMismatch (-32020): tools/list refreshed; retrying once');
      return true;
    } catch (error) {
      // A cancel or deadline stops here; any other failure of the bridge's own tools/list must
      // not replace the server's answer: the -32020 is forwarded so the client can recover.
      if (request.signal.aborted) throw error;
      const failure = this.#deps.endpoint.failure(error, request.signal);
      this.#deps.logger.warn(
        { id: toLoggedId(request.id), code: failure.code, status: failure.context.status },
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
          bodyExcerpt: excerptOf(reply.text, this.#deps.redact),
          hint: 'this URL may not be an MCP endpoint: check --url',
        });
      default:
        return new BridgeError('REMOTE_BAD_REPLY', `the server accepted ${method} with ${status} but sent no answer`, {
          status,
          hint: 'a request needs a JSON or event-stream reply; the server may not speak MCP Streamable HTTP',
        });
    }
  }
}

/** An event's message as the server wrote it, when that is one line: a large event's proven bytes, a small one's text. */
function serialisedOf(item: StreamItem): string | Buffer | undefined {
  return item.bytes ?? (item.data !== undefined && isSingleLine(item.data) ? item.data : undefined);
}

/** JSON-RPC codes only a 2026-07-28 server sends: a server/discover refused with one is not a 2025 server. */
const MODERN_ERROR_CODES = new Set([-32020, -32021, -32022]);

/**
 * server/discover refused with a 4xx that says "not this era", not "not allowed" (401/403) or a
 * 2026 error: clients probe with server/discover before falling back to initialize, and an error
 * that is not a 2026 one makes them fall back at once (2026-07-28 transports §Backward
 * Compatibility). Undefined for any other refusal.
 */
function discoverRefusal(reply: Extract<Reply, { kind: 'http-error' }>, redact: Redactor): BridgeError | undefined {
  const { status, parsed } = reply;
  if (status < 400 || status >= 500 || status === 401 || status === 403) return undefined;
  const code = isJsonObject(parsed) && isJsonObject(parsed.error) ? parsed.error.code : undefined;
  if (typeof code === 'number' && MODERN_ERROR_CODES.has(code)) return undefined;
  return new BridgeError(
    'METHOD_NOT_FOUND',
    'Method not found: the server does not offer server/discover (it speaks a 2025 protocol revision: use initialize)',
    {
      status,
      bodyExcerpt: excerptOf(reply.text, redact),
    },
  );
}
