// The 2024-11-05 HTTP+SSE transport: one GET event stream carries every server message, each client message is POSTed to the endpoint it names.

import type { BridgeConfig } from '../config/config.js';
import type { CredentialChallenge } from '../core/credential.js';
import { BridgeError, isBridgeError } from '../core/errors.js';
import { Aborts, untilAborted, type AbortSource } from '../core/abort.js';
import { isSingleLine, type RequestBody } from '../core/json-rpc.js';
import type { Endpoint } from '../http/endpoint.js';
import { readErrorBody, readReply, type Reply, type StreamItem } from '../http/reply-reader.js';
import { headerValue, mediaTypeOf } from '../http/header-values.js';
import { excerptOf, LOG_EXCERPT_CHARS } from '../logging/outgoing-text.js';
import { refusesCredential, statusError } from '../http/status-errors.js';
import type { HttpExchange } from '../http/send.js';
import type { Logger } from '../logging/logger.js';
import type { Redactor } from '../logging/redactor.js';
import type { OtherMessage, RegisteredRequest, RequestMessage, ServerMessageSink, Transport } from './transport.js';
import { MAX_ENDPOINT_EVENT_BYTES, messageEndpointOf } from './http-sse-endpoint.js';

/** What a user can do once the stream is gone: the session it carried went with it. */
const STREAM_LOST_HINT =
  'the 2024-11-05 transport cannot resume a stream, and a new one is a new session the client never initialized: restart this MCP server in the client';

export interface HttpSseDeps {
  config: BridgeConfig;
  endpoint: Endpoint;
  /** Every message of the stream goes there: the router matches responses to their requests. */
  sink: ServerMessageSink;
  /** Back-pressure from stdout: the stream is not read further while this returns a promise. */
  room: () => Promise<void> | undefined;
  logger: Logger;
  redact: Redactor;
}

/**
 * The 2024-11-05 transport (transports §HTTP with SSE): the client opens one GET event stream,
 * whose first event, `endpoint`, names the URL every client message is POSTed to; every server
 * message, responses included, arrives on that stream. There are no session headers: the session
 * is the stream and the URL it named.
 *
 * The stream is not reopened when it ends. That transport has no resumption, and a new GET is a
 * new session with a new endpoint that the client never initialized: the server would refuse
 * every request on it, or answer them without the capabilities the client negotiated. So a lost
 * stream answers each request waiting on it once with REMOTE_STREAM_ENDED, and every later one at
 * once, which tells the client (and the person behind it) that the server must be restarted.
 */
export class HttpSseTransport implements Transport {
  readonly #deps: HttpSseDeps;
  #opening: Promise<URL> | undefined;
  /** Aborting it ends the event stream (shutdown, the endpoint wait's bound, a refused endpoint). */
  #stream = new Aborts();
  /** The requests whose responses are awaited on the stream, to be told once if it is lost. */
  readonly #waiting = new Set<(lost: BridgeError) => void>();
  #lost: BridgeError | undefined;
  #closed = false;
  /** The reading of the stream, for close() to wait on. */
  #reading: Promise<void> | undefined;

  constructor(deps: HttpSseDeps) {
    this.#deps = deps;
  }

  /** The URL messages go to, once the stream named it. */
  #postUrl: URL | undefined;

  /**
   * Opens the event stream (once per run) and resolves with the URL messages go to, or rejects with
   * why this URL does not offer the transport. Shared by every caller. A stream that never opened
   * is tried again by the next message that needs it (a server still starting, a network back):
   * one GET per try, bounded by the connect timeout, and no loop of its own.
   */
  connect(): Promise<URL> {
    if (this.#closed) return Promise.reject(new BridgeError('SHUTTING_DOWN', 'the bridge is shutting down'));
    if (this.#opening === undefined) {
      const stream = new Aborts();
      this.#stream = stream;
      const opening = this.#connect(stream);
      this.#opening = opening;
      opening.catch(() => {
        if (this.#opening === opening) this.#opening = undefined;
      });
    }
    return this.#opening;
  }

  /**
   * Posts the request and resolves once its response came on the stream (the router wrote it);
   * rejects with why it could not be sent, or with the loss of the stream it waited on.
   */
  async request(request: RegisteredRequest, incoming: RequestMessage): Promise<void> {
    let lose!: (lost: BridgeError) => void;
    const lost = new Promise<never>((_, reject) => (lose = reject));
    // Lost before the race below began (while connecting or posting): the race still sees it.
    lost.catch(() => undefined);
    // Watched before the POST: the response may come on the stream before the POST's 202.
    this.#waiting.add(lose);
    try {
      const url = await untilAborted(this.connect(), request.aborts);
      if (this.#lost !== undefined) throw this.#lost;
      await untilAborted(this.#post(url, incoming.body, request.method, request.aborts, request.signal), request.aborts);
      await Promise.race([request.finished, lost]);
    } finally {
      this.#waiting.delete(lose);
    }
  }

  /**
   * Posts a notification or a response (answer to a server request). Cancellation is a
   * notification the server gets (2024-11-05 utilities/cancellation), so it is always posted.
   */
  async post(incoming: OtherMessage, aborts: Aborts): Promise<void> {
    const label = incoming.kind === 'notification' ? incoming.method : '(response)';
    const url = await untilAborted(this.connect(), aborts);
    if (this.#lost !== undefined) throw this.#lost;
    await untilAborted(this.#post(url, incoming.body, label, aborts, aborts.signal), aborts);
    if (this.#deps.logger.isLevelEnabled('debug')) this.#deps.logger.debug({ method: label }, 'message accepted');
  }

  /** The 2024-11-05 transport keeps nothing alive of its own: the stream stays open until close(). */
  beginShutdown(): void {}

  /** Ends the event stream (shutdown); what is still waiting was answered by the pipeline. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stream.abort(new BridgeError('SHUTTING_DOWN', 'the bridge is shutting down'));
    await this.#reading;
  }

  /**
   * GET with `Accept: text/event-stream` on the configured URL (2024-11-05 transports §HTTP with
   * SSE), the credential on it as on every request; a 401 renews the credential once. Resolves
   * once the first event named an endpoint; bounded by the connect timeout.
   */
  async #connect(stream: Aborts): Promise<URL> {
    const { endpoint, config, logger } = this.#deps;
    const waitMs = config.connectTimeoutMs;
    const timer = setTimeout(
      () =>
        stream.abort(
          new BridgeError('REMOTE_BAD_REPLY', `the server's event stream named no endpoint within ${waitMs} ms`, {
            hint: 'an HTTP+SSE (2024-11-05) server sends its endpoint event first, at once; raise --connect-timeout if it is only slow',
          }),
        ),
      waitMs,
    );
    try {
      let exchange = await endpoint.get({}, stream);
      const refusedStatus = exchange.status;
      if (refusedStatus === 401 || refusedStatus === 403) {
        const text = await readErrorBody(exchange);
        const challenge: CredentialChallenge = {
          status: refusedStatus,
          wwwAuthenticate: headerValue(exchange.headers, 'www-authenticate'),
          sent: exchange.sentAuthorization,
        };
        if (refusedStatus === 401 && (await untilAborted(endpoint.credential.renew(challenge, stream.signal), stream))) {
          exchange = await endpoint.get({}, stream);
        } else {
          throw this.#refusal('the GET of the event stream', exchange, { kind: 'http-error', status: exchange.status, text, parsed: undefined });
        }
      }
      if (exchange.status !== 200 || mediaTypeOf(exchange.headers) !== 'text/event-stream') {
        const text = await readErrorBody(exchange);
        throw new BridgeError(
          'REMOTE_BAD_REPLY',
          `the GET of the event stream was answered ${exchange.status} ${mediaTypeOf(exchange.headers) ?? '(no type)'}`,
          {
            status: exchange.status,
            bodyExcerpt: excerptOf(text, this.#deps.redact),
            hint: 'this URL does not offer an HTTP+SSE (2024-11-05) event stream: check --url',
          },
        );
      }
      // Where the stream is now: a same-origin 307/308 on the GET moved the endpoint there.
      const streamUrl = endpoint.url;
      let named!: (url: URL) => void;
      let refused!: (error: BridgeError) => void;
      const endpointNamed = new Promise<URL>((resolve, reject) => {
        named = resolve;
        refused = reject;
      });
      this.#reading = this.#read(exchange, stream, streamUrl, named, refused);
      const url = await endpointNamed;
      logger.debug({ endpoint: url.pathname }, 'HTTP+SSE event stream open');
      return url;
    } catch (error) {
      stream.abort(error);
      throw this.#deps.endpoint.failure(error, stream);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads the stream to its end: the endpoint first, then every server message, to the router. */
  async #read(exchange: HttpExchange, stream: Aborts, streamUrl: URL, named: (url: URL) => void, refused: (error: BridgeError) => void): Promise<void> {
    const { config, logger, sink } = this.#deps;
    let failure: unknown;
    try {
      await readReply(exchange, {
        maxMessageBytes: config.maxMessageBytes,
        signal: stream,
        room: this.#deps.room,
        stream: {
          lingerMs: 0,
          idleTimeoutMs: config.streamIdleTimeoutMs,
          firstEventMaxBytes: MAX_ENDPOINT_EVENT_BYTES,
          typedEvents: true,
          onItem: async (item: StreamItem): Promise<'continue' | 'answered'> => {
            if (this.#postUrl === undefined) {
              if (item.type !== 'endpoint') {
                // Without the endpoint nothing can be sent: this is not the 2024-11-05 transport.
                refused(
                  new BridgeError(
                    'REMOTE_BAD_REPLY',
                    `the server's event stream did not start with an endpoint event (its first event is ${item.type ?? 'a message'})`,
                    {
                      hint: 'this URL does not offer the HTTP+SSE (2024-11-05) transport: check --url',
                    },
                  ),
                );
                return 'answered';
              }
              try {
                this.#postUrl = messageEndpointOf(item.data ?? '', streamUrl);
              } catch (error) {
                refused(error as BridgeError);
                return 'answered';
              }
              named(this.#postUrl);
              return 'continue';
            }
            if (item.type !== undefined) {
              logger.debug({ event: excerptOf(item.type, this.#deps.redact, LOG_EXCERPT_CHARS) }, 'event stream: an event that carries no message; skipped');
              return 'continue';
            }
            if (item.message === undefined) {
              if (item.unparsed === true)
                logger.warn({ data: excerptOf(item.data ?? '', this.#deps.redact) }, 'event stream: an event that is not JSON; skipped');
              return 'continue';
            }
            const serialised = item.data !== undefined && isSingleLine(item.data) ? item.data : undefined;
            await sink.route(item.message, serialised);
            return 'continue';
          },
        },
      });
    } catch (error) {
      failure = error;
    }
    if (this.#postUrl === undefined) {
      refused(
        isBridgeError(failure)
          ? failure
          : new BridgeError('REMOTE_BAD_REPLY', "the server's event stream ended before it named an endpoint", {
              hint: 'this URL does not offer the HTTP+SSE (2024-11-05) transport: check --url',
            }),
      );
      return;
    }
    this.#lose(failure);
  }

  /** The stream is gone: each request waiting on it is answered once, every later one at once. */
  #lose(cause: unknown): void {
    if (this.#closed || this.#lost !== undefined) return;
    const why = cause === undefined ? 'ended' : `broke (${this.#deps.endpoint.failure(cause, undefined).message})`;
    this.#lost = new BridgeError('REMOTE_STREAM_ENDED', `the server's HTTP+SSE event stream ${why}: the session it carried is gone`, {
      hint: STREAM_LOST_HINT,
    });
    this.#deps.logger.error({ waiting: this.#waiting.size, hint: STREAM_LOST_HINT }, this.#lost.message);
    for (const lose of this.#waiting) lose(this.#lost);
    this.#waiting.clear();
  }

  /**
   * POSTs one message to the endpoint the stream named; the server takes it with 202 and answers
   * on the stream (2024-11-05 transports §HTTP with SSE). A refused credential is renewed once.
   */
  async #post(url: URL, body: RequestBody, label: string, aborts: AbortSource, signal: AbortSignal): Promise<void> {
    const { endpoint, config } = this.#deps;
    let renewed = false;
    for (;;) {
      const exchange = await endpoint.postTo(url, body, aborts);
      const reply = await readReply(exchange, { maxMessageBytes: config.maxMessageBytes, signal: aborts, acceptAny2xx: true });
      if (reply.kind === 'accepted') return;
      if (reply.kind === 'http-error' && !renewed && refusesCredential(reply)) {
        renewed = true;
        const challenge = { status: reply.status as 401 | 403, wwwAuthenticate: reply.wwwAuthenticate, sent: exchange.sentAuthorization };
        if (await untilAborted(endpoint.credential.renew(challenge, signal), aborts)) continue;
      }
      throw this.#refusal(label, exchange, reply);
    }
  }

  /** The error a message refused by the endpoint gets: the session named by the stream may be gone. */
  #refusal(label: string, exchange: HttpExchange, reply: Reply): BridgeError {
    const status = reply.status;
    const text = reply.kind === 'http-error' ? reply.text : '';
    if (status === 404 || status === 410) {
      return new BridgeError('SESSION_LOST', `the server no longer knows the HTTP+SSE session it named: ${label} was answered HTTP ${status}`, {
        status,
        bodyExcerpt: excerptOf(text, this.#deps.redact),
        hint: STREAM_LOST_HINT,
      });
    }
    if (reply.kind === 'redirect') {
      return new BridgeError('REDIRECT_REFUSED', `the server redirected ${label} (${status}); the bridge follows only a 307 or 308 to the same origin`, {
        status,
      });
    }
    return statusError(label, exchange, {
      body: text,
      parsed: reply.kind === 'http-error' ? reply.parsed : undefined,
      redact: this.#deps.redact,
      ...this.#deps.endpoint.refusalContext(exchange),
      hadSession: true,
    });
  }
}
