// The one MCP endpoint: sends POST/GET/DELETE there with the headers every request carries, where it is now.

import type { Dispatcher } from './undici-parts.js';
import type { BridgeConfig } from '../config/config.js';
import { CookieJar } from './cookie-jar.js';
import type { Credential } from '../core/credential.js';
import { BridgeError } from '../core/errors.js';
import type { Logger } from '../logging/logger.js';
import { MAX_REDIRECT_HOPS, sameOriginTarget } from './redirects.js';
import { readErrorBody } from './reply-reader.js';
import { maskUrl, type Redactor } from '../logging/redactor.js';
import type { RequestBody } from '../core/json-rpc.js';
import { type AbortSource } from '../core/abort.js';
import { proxyFor } from './dispatcher.js';
import { toBridgeError } from './failures.js';
import type { StatusContext } from './status-errors.js';
import { sendHttp, type HttpExchange, type HttpMethod } from './send.js';
import { headerValue } from './header-values.js';

export const ACCEPT_BOTH = 'application/json, text/event-stream';

/** What the endpoint tells about itself: a move after a redirect (info), cookies (debug, names only). */
export interface EndpointOptions {
  logger?: Logger | undefined;
  /** Cookie values join it, so logs (and stdout) mask them as they mask the token. */
  redact?: Pick<Redactor, 'add'> | undefined;
}

export class Endpoint {
  /** Where requests go: the configured URL, or where a same-origin 307/308 moved it for the run. */
  #url: URL;
  /** Cookies the endpoint's origin set, for this run only: never written anywhere. */
  readonly #cookies: CookieJar;
  readonly #logger: Logger | undefined;
  /** Read for every request, so a renewed credential applies to the next send. */
  readonly credential: Credential;
  readonly #dispatcher: Dispatcher;
  readonly #baseHeaders: Record<string, string>;
  readonly #proxy: string | undefined;
  readonly #clientCertificate: string | undefined;
  readonly #tokenSource: string;
  readonly #tokenEnv: string;

  /** `credential` is what every request carries: createCredential makes it from the config. */
  constructor(
    config: BridgeConfig,
    dispatcher: Dispatcher,
    env: Readonly<Record<string, string | undefined>>,
    credential: Credential,
    options: EndpointOptions = {},
  ) {
    this.#url = config.url;
    this.credential = credential;
    this.#logger = options.logger;
    const { redact } = options;
    this.#cookies = new CookieJar({
      origin: config.url.origin,
      logger: options.logger,
      onSecret: redact === undefined ? undefined : (value) => void redact.add(value),
    });
    this.#dispatcher = dispatcher;
    this.#proxy = proxyFor(config.url, env);
    this.#clientCertificate = config.clientCertificate?.certFile;
    this.#tokenSource = config.tokenSource;
    this.#tokenEnv = config.tokenEnv;
    const headers: Record<string, string> = {};
    for (const [name, value] of config.extraHeaders) headers[name.toLowerCase()] = value;
    this.#baseHeaders = headers;
  }

  /**
   * POSTs one JSON-RPC message (its serialised text, or a large line's bytes) with the protocol
   * headers given. `onArrived` sees each answer's whole body the moment it arrived (send.ts).
   */
  post(body: RequestBody, protocolHeaders: Record<string, string>, signal: AbortSource, onArrived?: (exchange: HttpExchange) => void): Promise<HttpExchange> {
    return this.#follow('POST', protocolHeaders, signal, body, onArrived);
  }

  /**
   * POSTs one message to another URL of the endpoint's own origin (the 2024-11-05 transport's
   * message endpoint), with the same credential and cookies; a redirect there is followed as for
   * the endpoint, and never moves the endpoint itself. The caller checked the origin.
   */
  postTo(url: URL, body: RequestBody, signal: AbortSource): Promise<HttpExchange> {
    return this.#follow('POST', {}, signal, body, undefined, url);
  }

  /** Opens a GET event stream (legacy listen stream, or resumption with Last-Event-ID). */
  get(protocolHeaders: Record<string, string>, signal: AbortSource): Promise<HttpExchange> {
    return this.#follow('GET', { ...protocolHeaders, accept: 'text/event-stream' }, signal);
  }

  delete(protocolHeaders: Record<string, string>, signal: AbortSource): Promise<HttpExchange> {
    return this.#follow('DELETE', protocolHeaders, signal);
  }

  get url(): URL {
    return this.#url;
  }

  /**
   * Sends one request with the origin's cookies, keeps the cookies its reply sets, and follows a
   * 307/308 to the same origin (the body re-sent unchanged), MAX_REDIRECT_HOPS at most. The URL a
   * followed chain ends at is where every later request goes. Any other redirect is returned as
   * it came, for the reply reader to refuse.
   */
  async #follow(
    method: HttpMethod,
    headers: Record<string, string>,
    signal: AbortSource,
    body?: RequestBody,
    onArrived?: (exchange: HttpExchange) => void,
    start: URL = this.#url,
  ): Promise<HttpExchange> {
    let url = start;
    let redirectStatus = 0;
    for (let hops = 0; ; hops++) {
      const cookie = this.#cookies.header(url);
      // On every HTTP request, POST, GET and DELETE alike (authorization §Token Requirements), read
      // now: a credential renewed after a 401 applies from the next send on.
      const authorization = this.credential.authorization();
      const exchange = await this.#send(method, url, headers, authorization, cookie, signal, body, onArrived);
      exchange.sentAuthorization = authorization;
      this.#cookies.store(url, exchange.headers['set-cookie']);
      const target = sameOriginTarget(url, exchange.status, headerValue(exchange.headers, 'location'));
      if (target === undefined) {
        // A chain that ends in an answer (not in a redirect the reader refuses) is remembered.
        if (url !== start && start === this.#url && (exchange.status < 300 || exchange.status >= 400)) this.#moveTo(url, redirectStatus);
        return exchange;
      }
      await readErrorBody(exchange);
      if (hops === MAX_REDIRECT_HOPS) {
        throw new BridgeError(
          'REDIRECT_REFUSED',
          `the server redirected ${method} more than ${MAX_REDIRECT_HOPS} times (last to ${maskUrl(target)}): a redirect loop`,
          {
            status: exchange.status,
            location: maskUrl(target),
            hint: "the server's redirects go round in a circle: check its routing, or pass the address that answers with --url",
          },
        );
      }
      url = target;
      redirectStatus = exchange.status;
    }
  }

  /** Every later request goes to `url`; said once, by the request that moved it first. */
  #moveTo(url: URL, status: number): void {
    if (this.#url.href === url.href) return;
    const from = this.#url;
    this.#url = url;
    this.#logger?.info(
      { from: maskUrl(from), to: maskUrl(url), status },
      'the server moved the endpoint (same-origin redirect): later requests go straight to the new URL',
    );
  }

  /**
   * What a refusal of `exchange` is judged by, the same for every command (status-errors.ts): where
   * the token came from, or where one would be set, and whether one was sent.
   */
  refusalContext(exchange: HttpExchange): Pick<StatusContext, 'tokenSource' | 'tokenSet' | 'tokenEnv'> {
    const source = this.credential.source;
    return {
      tokenSource: source === 'none' ? this.#tokenSource : source,
      tokenSet: exchange.sentAuthorization !== undefined,
      tokenEnv: this.#tokenEnv,
    };
  }

  /** Classifies a failure seen while reading a reply, with the proxy named where one is used. */
  failure(error: unknown, signal: AbortSource | undefined): BridgeError {
    return toBridgeError(error, signal, { url: this.url, proxy: this.#proxy, clientCertificate: this.#clientCertificate });
  }

  #send(
    method: HttpMethod,
    url: URL,
    headers: Record<string, string>,
    authorization: string | undefined,
    cookie: string | undefined,
    signal: AbortSource,
    body?: RequestBody,
    onArrived?: (exchange: HttpExchange) => void,
  ): Promise<HttpExchange> {
    // One header object per request, built in place (this runs for every message); a POST's own
    // two come last, so neither the protocol headers nor the configured ones replace them.
    const all = Object.assign({}, this.#baseHeaders, headers);
    if (method === 'POST') {
      all['content-type'] = 'application/json';
      all.accept = ACCEPT_BOTH;
    }
    if (authorization !== undefined) all.authorization = authorization;
    if (cookie !== undefined) all.cookie = cookie;
    // One literal with every key, body included when there is none: a spread adding the body would
    // give each request's options a hidden class of its own (see sendHttp's readers of them).
    return sendHttp(this.#dispatcher, { method, url, headers: all, body, signal, toFailure: (error: unknown) => this.failure(error, signal), onArrived });
  }
}
