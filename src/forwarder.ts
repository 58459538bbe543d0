// Posts each checked message to the endpoint and routes what comes back to exactly one reply.

import { isUtf8 } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BridgeConfig } from './config.js';
import type { Endpoint } from './endpoint.js';
import { BridgeError, isBridgeError } from './errors.js';
import { encodeHeaderValue, mcpNameFor } from './headers.js';
import { CANCELLED, type Era, type InFlight, type PendingRequest } from './in-flight.js';
import { classifyServerMessage, errorReply, isJsonObject, isSingleLine, modernVersionOf, type IncomingMessage, type JsonObject } from './json-rpc.js';
import { saysSessionUnknown, type LegacySession } from './legacy-session.js';
import type { Logger } from './logger.js';
import type { HttpExchange } from './remote.js';
import { excerptOf, headerValue, mediaTypeOf, readBoundedBytes, readErrorBody, readPrivateResponse, readStreamItems, retryAfterMs, singleLineBytes, tryParseJson } from './reply-reader.js';
import type { Redactor } from './secrets.js';
import { statusError } from './status-errors.js';
import type { ToolHeaderRegistry } from './tool-headers.js';

/** Retries of a request that provably never left (connection refused, DNS), and their delays. */
export const NEVER_SENT_RETRY_DELAYS_MS = [200, 800] as const;
/** Retries after 429/503 with Retry-After, and the longest single wait honoured. */
export const RATE_LIMIT_RETRIES = 3;
export const MAX_RETRY_AFTER_MS = 30_000;
/** Resumptions of one cut POST stream (2025-11-25 polling) without any new event in between. */
export const MAX_IDLE_RESUMES = 3;
export const MAX_RESUME_DELAY_MS = 60_000;
/** Bound on posting a notification or response when requests have no deadline (`--request-timeout 0`). */
export const NOTIFICATION_TIMEOUT_MS = 60_000;
/** How long a stream may stay open after it delivered the response before the bridge closes it. */
export const STREAM_LINGER_MS = 2_000;
/** Pages fetched when the bridge refreshes tools/list for itself after a -32020. */
export const MAX_TOOL_LIST_PAGES = 50;

/** The JSON-RPC code of HeaderMismatch (2026-07-28 schema HEADER_MISMATCH). */
const HEADER_MISMATCH = -32020;

export interface ForwarderDeps {
  config: BridgeConfig;
  endpoint: Endpoint;
  session: LegacySession;
  tools: ToolHeaderRegistry;
  inFlight: InFlight;
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  logger: Logger;
  redact: Redactor;
}

type Outcome = { kind: 'answered' } | { kind: 'retry'; why: string };

/** A protocol version may only be sent as given; one that cannot be a header value is refused locally. */
const SAFE_VERSION = /^[\x21-\x7e]{1,64}$/;

export class Forwarder {
  readonly #d: ForwarderDeps;
  #privateIds = 0;

  constructor(deps: ForwarderDeps) {
    this.#d = deps;
  }

  /** Sends a request read from stdin; its one reply is written whatever happens. */
  async forwardRequest(incoming: Extract<IncomingMessage, { kind: 'request' }>): Promise<void> {
    const { inFlight, session, logger } = this.#d;
    const { id, method, message } = incoming;
    const modernVersion = modernVersionOf(message);
    const era: Era = modernVersion === undefined ? 'legacy' : 'modern';
    // subscriptions/listen stays open for hours by design (2026-07-28 subscriptions): no deadline.
    const pending = inFlight.begin(id, method, era, { deadline: method !== 'subscriptions/listen' });
    if (pending === undefined) {
      await this.#d.write(errorReply(id, -32600, 'Invalid Request: this id is already used by a request that is still outstanding', { bridgeCode: 'INVALID_REQUEST' }));
      return;
    }
    if (modernVersion !== undefined && !SAFE_VERSION.test(modernVersion)) {
      await pending.settle(errorReply(id, -32600, 'Invalid Request: the protocol version in _meta is not a valid header value', { bridgeCode: 'INVALID_REQUEST' }));
      return;
    }
    const started = performance.now();
    const isInitialize = era === 'legacy' && method === 'initialize';
    let status: number | undefined;
    try {
      if (isInitialize) session.beginInitialize(isJsonObject(message.params) ? message.params : {});
      else if (era === 'legacy') await session.ready();
      status = await this.#exchangeRequest(pending, message, incoming.text);
    } catch (error) {
      if (!pending.cancelled) {
        const failure = this.#failureOf(error, pending.signal);
        status = failure.context.status;
        logger.warn({ method, id, code: failure.code, status: failure.context.status, hint: failure.context.hint }, failure.message);
        await pending.fail(failure);
      }
    } finally {
      // The exactly-once promise does not rest on every path above being right: a request that
      // somehow has no reply by now gets one.
      if (!pending.done) await pending.fail(new BridgeError('INTERNAL', `the bridge finished ${method} without an answer`));
      if (isInitialize) session.abandonInitialize();
      logger.debug({ method, id, status, cancelled: pending.cancelled || undefined, ms: Math.round(performance.now() - started) }, 'request done');
    }
  }

  /** Posts a notification or a response (answer to a server request); failures are only logged. */
  async forwardOther(incoming: Exclude<IncomingMessage, { kind: 'request' }>): Promise<void> {
    const { session, logger, inFlight } = this.#d;
    const method = incoming.kind === 'notification' ? incoming.method : undefined;
    if (method === 'notifications/cancelled') {
      const params = incoming.message.params;
      const requestId = isJsonObject(params) ? params.requestId : undefined;
      const target = typeof requestId === 'string' || typeof requestId === 'number' ? inFlight.get(requestId) : undefined;
      if (target !== undefined) {
        inFlight.cancel(target.id);
        logger.debug({ id: target.id, era: target.era }, 'request cancelled by the client');
        // 2026-07-28: closing the stream IS the cancellation; the notification is not sent over HTTP
        // (transports §Cancellation). 2025: cancellation is explicit, so it is posted.
        if (target.era === 'modern') return;
      } else if (modernVersionOf(incoming.message) !== undefined || !session.established) {
        logger.debug({ requestId }, 'cancel for a request that is not outstanding; nothing to do');
        return;
      }
    }
    const era: Era = modernVersionOf(incoming.message) !== undefined ? 'modern' : 'legacy';
    try {
      if (era === 'legacy') await session.ready();
      const signal = AbortSignal.timeout(this.#d.config.requestTimeoutMs || NOTIFICATION_TIMEOUT_MS);
      let healed = false;
      for (;;) {
        const headers = this.#protocolHeaders(incoming.message, method, era);
        const exchange = await this.#d.endpoint.post(incoming.text, headers, signal);
        if (!healed && (await this.#checkSessionExpiry(exchange, headers, era)).expired) {
          healed = true;
          await session.heal(headers['mcp-session-id']!);
          continue;
        }
        if (exchange.status >= 200 && exchange.status < 300) {
          await exchange.body.dump();
          if (method === 'notifications/initialized' && era === 'legacy') session.onInitialized();
          logger.debug({ method: method ?? '(response)', status: exchange.status }, 'message accepted');
          return;
        }
        const text = await readErrorBody(exchange);
        logger.warn({ method: method ?? '(response)', status: exchange.status, body: excerptOf(this.#d.redact(text)) }, 'the server did not accept the message');
        return;
      }
    } catch (error) {
      const failure = this.#failureOf(error, undefined);
      logger.warn({ method: method ?? '(response)', code: failure.code, hint: failure.context.hint }, failure.message);
    }
  }

  /** A message from the server outside the exchange it answers (listen stream, another request's stream). */
  async routeServerMessage(message: JsonObject, owner?: PendingRequest, serialised?: string): Promise<void> {
    const routed = classifyServerMessage(message);
    if (routed === undefined) {
      this.#d.logger.warn('the server sent something that is not a JSON-RPC message; skipped');
      return;
    }
    if (routed.kind === 'response') {
      const target = this.#d.inFlight.get(routed.id);
      if (target !== undefined && !target.done) {
        await this.#deliver(target, routed.message, undefined, serialised);
        return;
      }
      this.#d.logger.warn({ id: routed.id }, 'the server sent a response for no outstanding request; dropped');
      return;
    }
    // Requests and notifications for a request that is finished or cancelled are not written:
    // after a cancel "nothing more is written for that request id".
    if (owner?.done === true) return;
    await this.#d.write(routed.message, serialised);
  }

  /** Posts the request (again where that is safe) until it is answered; resolves with the final HTTP status. */
  async #exchangeRequest(pending: PendingRequest, message: JsonObject, body: string): Promise<number> {
    let neverSentRetries = 0;
    let rateLimitRetries = 0;
    let healed = false;
    let headersRefreshed = false;
    for (;;) {
      const headers = this.#protocolHeaders(message, pending.method, pending.era);
      let exchange: HttpExchange;
      try {
        exchange = await this.#d.endpoint.post(body, headers, pending.signal);
      } catch (error) {
        const failure = this.#failureOf(error, pending.signal);
        const delay = NEVER_SENT_RETRY_DELAYS_MS[neverSentRetries];
        // Only a request that provably never reached the server may be sent again (issue: retries).
        if (failure.context.neverSent === true && delay !== undefined) {
          neverSentRetries++;
          this.#d.logger.debug({ id: pending.id, delay, code: failure.code }, 'connection failed before sending; retrying');
          await sleep(delay, undefined, { signal: pending.signal });
          continue;
        }
        throw failure;
      }
      const expiry = healed ? { expired: false } : await this.#checkSessionExpiry(exchange, headers, pending.era);
      if (expiry.expired) {
        healed = true;
        await this.#d.session.heal(headers['mcp-session-id']!);
        continue;
      }
      const waitMs = retryAfterMs(exchange.headers);
      // A wait that would outlast the request deadline is not started: the 429/503 is the answer now,
      // rather than a REQUEST_TIMEOUT later that hides what the server said (hardening: retries).
      const beforeDeadline = pending.deadlineAt === undefined || performance.now() + (waitMs ?? 0) < pending.deadlineAt;
      if ((exchange.status === 429 || exchange.status === 503) && waitMs !== undefined && rateLimitRetries < RATE_LIMIT_RETRIES && waitMs <= MAX_RETRY_AFTER_MS && beforeDeadline) {
        rateLimitRetries++;
        await readErrorBody(exchange);
        this.#d.logger.info({ id: pending.id, status: exchange.status, waitMs }, 'server asked to retry later; waiting');
        await sleep(waitMs, undefined, { signal: pending.signal });
        continue;
      }
      const outcome = await this.#readReply(pending, exchange, message, { mayRefreshTools: !headersRefreshed, errorBody: expiry.body });
      if (outcome.kind === 'answered') return exchange.status;
      headersRefreshed = true;
      this.#d.logger.info({ id: pending.id, why: outcome.why }, 'retrying once');
    }
  }

  /** The headers a POST of `message` carries, by era (core issue item 5; issue 3 items 7–8). */
  #protocolHeaders(message: JsonObject, method: string | undefined, era: Era): Record<string, string> {
    const headers: Record<string, string> = {};
    if (method !== undefined) {
      headers['mcp-method'] = encodeHeaderValue(method);
      const name = mcpNameFor(method, message.params);
      if (name !== undefined) headers['mcp-name'] = encodeHeaderValue(name);
    }
    if (era === 'modern') {
      // From the body, per request, never from connection state (transports §Protocol Version Header).
      headers['mcp-protocol-version'] = modernVersionOf(message)!;
      if (method === 'tools/call') Object.assign(headers, lowerCaseKeys(this.#d.tools.headersForCall(message.params)));
    } else if (method !== 'initialize') {
      // The initialize POST carries neither a session id nor a version: nothing is negotiated yet.
      Object.assign(headers, this.#d.session.headers());
    }
    return headers;
  }

  /**
   * Legacy only: a 404 to a request that carried a session id, or a 400 whose JSON-RPC error says
   * the session is unknown (what the SDK's example servers answer). A 400 body read for this
   * check and not about the session is handed back, so the reply reader need not read it again.
   */
  async #checkSessionExpiry(exchange: HttpExchange, headers: Record<string, string>, era: Era): Promise<{ expired: boolean; body?: string }> {
    if (era !== 'legacy' || headers['mcp-session-id'] === undefined) return { expired: false };
    if (exchange.status === 404) {
      await readErrorBody(exchange);
      return { expired: true };
    }
    if (exchange.status !== 400) return { expired: false };
    const body = await readErrorBody(exchange);
    const expired = saysSessionUnknown(body);
    return expired ? { expired } : { expired, body };
  }

  async #readReply(pending: PendingRequest, exchange: HttpExchange, message: JsonObject, options: { mayRefreshTools: boolean; errorBody: string | undefined }): Promise<Outcome> {
    const { status } = exchange;
    const type = mediaTypeOf(exchange.headers);
    if (status >= 200 && status < 300) {
      if (type === 'text/event-stream') {
        await this.#readStream(pending, exchange);
        return { kind: 'answered' };
      }
      if (status === 202 || status === 204) {
        await readErrorBody(exchange);
        throw new BridgeError('REMOTE_BAD_REPLY', `the server accepted ${pending.method} with ${status} but sent no answer`, {
          status,
          hint: 'a request needs a JSON or event-stream reply; the server may not speak MCP Streamable HTTP',
        });
      }
      if (type === 'application/json') {
        const bytes = await readBoundedBytes(exchange, this.#d.config.maxMessageBytes).catch((error: unknown) => {
          throw withStatus(this.#failureOf(error, pending.signal), status);
        });
        await this.#readJson(pending, exchange, bytes);
        return { kind: 'answered' };
      }
      const text = await readErrorBody(exchange);
      throw new BridgeError('REMOTE_BAD_REPLY', `the server answered with content type ${type ?? '(none)'}, not JSON or an event stream`, {
        status,
        bodyExcerpt: excerptOf(this.#d.redact(text)),
        hint: 'this URL may not be an MCP endpoint: check --url',
      });
    }
    if (status >= 300 && status < 400) {
      await readErrorBody(exchange);
      const location = headerValue(exchange.headers, 'location');
      throw new BridgeError('REDIRECT_REFUSED', `the server redirected ${pending.method} (${status}) to ${location ?? '(no Location)'}; the bridge does not follow redirects`, {
        status,
        ...(location === undefined ? {} : { location }),
        hint: 'so the token never reaches another address, redirects are not followed: if the new address is right, pass it with --url',
      });
    }
    const text = options.errorBody ?? (await readErrorBody(exchange));
    const parsed = tryParseJson(text);
    // A JSON-RPC error for this very id is the server's answer: forwarded unchanged, so modern
    // clients see -32020/-32021/-32022 and -32601 and can renegotiate (wire rules §13).
    if (isJsonObject(parsed) && parsed.jsonrpc === '2.0' && parsed.id === pending.id && isJsonObject(parsed.error)) {
      if (parsed.error.code === HEADER_MISMATCH && pending.era === 'modern' && pending.method === 'tools/call' && options.mayRefreshTools) {
        try {
          await this.#refreshTools(pending, message);
          return { kind: 'retry', why: 'HeaderMismatch (-32020): tools/list refreshed' };
        } catch (error) {
          // A cancel or deadline stops here; any other failure of the bridge's own tools/list must
          // not replace the server's answer: the -32020 is forwarded so the client can recover.
          if (pending.signal.aborted) throw error;
          const failure = this.#failureOf(error, pending.signal);
          this.#d.logger.warn({ id: pending.id, code: failure.code, status: failure.context.status }, `refreshing tools/list after a -32020 failed (${failure.message}); the -32020 is forwarded`);
        }
      }
      await this.#deliver(pending, parsed, exchange, undefined);
      return { kind: 'answered' };
    }
    throw statusError(pending.method, exchange, {
      body: text,
      parsed,
      redact: this.#d.redact,
      tokenSource: this.#d.config.tokenSource,
      tokenSet: this.#d.config.token !== undefined,
      hadSession: this.#d.session.sessionId !== undefined,
    });
  }

  async #readJson(pending: PendingRequest, exchange: HttpExchange, bytes: Buffer): Promise<void> {
    const text = bytes.toString('utf8');
    const parsed = tryParseJson(text);
    if (parsed === undefined) {
      throw new BridgeError('REMOTE_BAD_REPLY', 'the server said application/json but the body is not JSON', {
        status: exchange.status,
        bodyExcerpt: excerptOf(this.#d.redact(text)),
        hint: 'a proxy or gateway may have answered instead of the MCP server',
      });
    }
    if (Array.isArray(parsed)) {
      throw new BridgeError('REMOTE_BAD_REPLY', 'the server answered with a JSON array; MCP (since 2025-06-18) allows one message per reply', {
        status: exchange.status,
        bodyExcerpt: excerptOf(this.#d.redact(text)),
      });
    }
    const routed = classifyServerMessage(parsed);
    if (routed?.kind === 'response' && routed.id === pending.id) {
      // Valid UTF-8 on one line: the server's bytes go to stdout as they are.
      const line = singleLineBytes(bytes);
      await this.#deliver(pending, routed.message, exchange, line !== undefined && isUtf8(line) ? line : undefined);
      return;
    }
    this.#d.logger.warn({ id: pending.id, got: isJsonObject(parsed) ? parsed.id : undefined }, 'the JSON reply is not the response to this request; dropped');
    throw new BridgeError('REMOTE_BAD_REPLY', 'the server replied with a message that is not the response to this request', {
      status: exchange.status,
      bodyExcerpt: excerptOf(this.#d.redact(text)),
    });
  }

  /** Reads a POST's event stream: other messages pass through as they arrive, the response ends it. */
  async #readStream(pending: PendingRequest, first: HttpExchange): Promise<void> {
    let exchange = first;
    let lastEventId: string | undefined;
    let retryMs: number | undefined;
    let idleResumes = 0;
    const isListen = pending.method === 'subscriptions/listen';
    for (;;) {
      let progressed = false;
      let answered = false;
      let linger: NodeJS.Timeout | undefined;
      try {
        for await (const item of readStreamItems(exchange, {
          maxMessageBytes: this.#d.config.maxMessageBytes,
          idleTimeoutMs: isListen ? 0 : this.#d.config.streamIdleTimeoutMs,
          onRetry: (ms) => (retryMs = ms),
        })) {
          // After the response the rest is read and dropped: a stream read to its end leaves the
          // connection reusable, while leaving it early costs a reset (and undici an AbortError).
          if (answered) continue;
          progressed = true;
          if (item.eventId !== undefined) lastEventId = item.eventId;
          if (item.message === undefined) {
            if (item.unparsed === true) this.#d.logger.warn({ id: pending.id, data: excerptOf(item.data ?? '') }, 'an event in the stream is not JSON; skipped');
            continue;
          }
          const serialised = item.data !== undefined && isSingleLine(item.data) ? item.data : undefined;
          const routed = classifyServerMessage(item.message);
          if (routed?.kind === 'response' && routed.id === pending.id) {
            await this.#deliver(pending, routed.message, first, serialised);
            answered = true;
            // The server SHOULD close the stream after the response (transports §Sending Messages);
            // one that does not is cut after a short while.
            linger = setTimeout(() => exchange.body.destroy(), STREAM_LINGER_MS);
            continue;
          }
          if (isJsonObject(item.message)) await this.routeServerMessage(item.message, pending, serialised);
        }
      } catch (error) {
        if (answered) return;
        const failure = withStatus(this.#failureOf(error, pending.signal), exchange.status);
        // A connection that broke after events with ids is resumed like one that ended: 2025-06-18
        // resumption exists for exactly this case ("resume after a broken connection", transports
        // §Resumability and Redelivery). Our own aborts and other failures stay failures.
        if (pending.signal.aborted || failure.code !== 'REMOTE_CONNECTION_LOST' || pending.era !== 'legacy' || lastEventId === undefined) throw failure;
        this.#d.logger.debug({ id: pending.id, lastEventId, cause: failure.context.cause }, 'event stream broke; resuming');
      } finally {
        clearTimeout(linger);
        if (!exchange.body.readableEnded) exchange.body.destroy();
      }
      if (answered) return;
      // The stream ended (or broke) before the response. A 2025-11-25 server may have closed the
      // connection on purpose after events with ids: resume with GET + Last-Event-ID after `retry` ms
      // (transports §Resumability). 2026-07-28 has no resumption: the request is lost (changelog major 9).
      idleResumes = progressed ? 0 : idleResumes + 1;
      if (pending.era !== 'legacy' || lastEventId === undefined || idleResumes > MAX_IDLE_RESUMES) {
        throw new BridgeError('REMOTE_STREAM_ENDED', `the server's event stream for ${pending.method} ended without the response`, {
          status: exchange.status,
          ...(lastEventId === undefined ? {} : { lastEventId }),
          hint:
            pending.era === 'modern'
              ? 'the request is lost; send it again with a new id'
              : 'the server closed the stream early and it could not be resumed; retry the call',
        });
      }
      await sleep(Math.min(retryMs ?? 0, MAX_RESUME_DELAY_MS), undefined, { signal: pending.signal });
      exchange = await this.#d.endpoint.get({ ...this.#d.session.headers(), 'last-event-id': lastEventId }, pending.signal);
      if (exchange.status !== 200 || mediaTypeOf(exchange.headers) !== 'text/event-stream') {
        const text = await readErrorBody(exchange);
        throw new BridgeError('REMOTE_STREAM_ENDED', `the stream for ${pending.method} was cut and resuming it failed with HTTP ${exchange.status}`, {
          status: exchange.status,
          bodyExcerpt: excerptOf(this.#d.redact(text)),
          lastEventId,
          hint: 'retry the call',
        });
      }
      this.#d.logger.debug({ id: pending.id, lastEventId }, 'resumed a cut event stream');
    }
  }

  /** Writes the final response of `pending`, after the bookkeeping some methods need. */
  async #deliver(pending: PendingRequest, message: JsonObject, exchange: HttpExchange | undefined, serialised?: string | Buffer): Promise<void> {
    let reply = message;
    let text = serialised;
    if (pending.era === 'legacy' && pending.method === 'initialize' && exchange !== undefined && isJsonObject(message.result)) {
      // Session id and version are taken before the result reaches the client, so its very next
      // message already carries them (core issue item 6).
      this.#d.session.completeInitialize(exchange, message.result);
    }
    if (pending.era === 'modern' && pending.method === 'tools/list' && isJsonObject(message.result)) {
      const { result, invalid } = this.#d.tools.rememberToolsListResult(message.result);
      for (const tool of invalid) {
        this.#d.logger.warn({ tool: tool.name, reason: tool.reason }, 'tool removed from tools/list: invalid x-mcp-header annotation');
      }
      if (invalid.length > 0) {
        reply = { ...message, result };
        text = undefined;
      }
    }
    await pending.settle(reply, text);
  }

  /** Fetches tools/list for the bridge itself (all pages) so the retry uses current schemas. */
  async #refreshTools(pending: PendingRequest, call: JsonObject): Promise<void> {
    // Speak as the call did: its protocol fields (version, capabilities, client info) in `_meta`.
    const meta: JsonObject = {};
    const callMeta = isJsonObject(call.params) && isJsonObject(call.params._meta) ? call.params._meta : {};
    for (const [key, value] of Object.entries(callMeta)) {
      if (key.startsWith('io.modelcontextprotocol/')) meta[key] = value;
    }
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_LIST_PAGES; page++) {
      const id = `fenbs-mcp-tools-refresh-${++this.#privateIds}`;
      const params: JsonObject = { _meta: meta };
      if (cursor !== undefined) params.cursor = cursor;
      const message = { jsonrpc: '2.0', id, method: 'tools/list', params };
      const exchange = await this.#d.endpoint.post(JSON.stringify(message), this.#protocolHeaders(message, 'tools/list', 'modern'), pending.signal);
      const response = await readPrivateResponse(exchange, id, this.#d.config.maxMessageBytes);
      if (!isJsonObject(response.result)) return;
      this.#d.tools.rememberToolsListResult(response.result);
      cursor = typeof response.result.nextCursor === 'string' ? response.result.nextCursor : undefined;
      if (cursor === undefined) return;
    }
  }

  #failureOf(error: unknown, signal: AbortSignal | undefined): BridgeError {
    if (signal?.aborted === true && signal.reason === CANCELLED) {
      return new BridgeError('INTERNAL', 'cancelled');
    }
    if (isBridgeError(error)) return error;
    return this.#d.endpoint.failure(error, signal);
  }
}

/**
 * A failure met while reading a body keeps the status its headers carried: an error reply has
 * data.status wherever the server sent one (core issue item 5), a cut-off 200 included.
 */
function withStatus(error: BridgeError, status: number): BridgeError {
  if (error.code !== 'INTERNAL' && error.context.status === undefined) error.context.status = status;
  return error;
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}
