// The one MCP endpoint: sends POST/GET/DELETE there with the headers every request carries.

import type { Dispatcher } from './undici-parts.js';
import type { BridgeConfig } from './config.js';
import { proxyFor, sendHttp, toBridgeError, type HttpExchange, type HttpMethod } from './remote.js';
import type { BridgeError } from './errors.js';
import type { AbortSource } from './in-flight.js';

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export class Endpoint {
  readonly url: URL;
  readonly #dispatcher: Dispatcher;
  readonly #baseHeaders: Record<string, string>;
  readonly #proxy: string | undefined;

  constructor(config: BridgeConfig, dispatcher: Dispatcher, env: Readonly<Record<string, string | undefined>>) {
    this.url = config.url;
    this.#dispatcher = dispatcher;
    this.#proxy = proxyFor(config.url, env);
    const headers: Record<string, string> = {};
    for (const [name, value] of config.extraHeaders) headers[name.toLowerCase()] = value;
    // Bearer on every HTTP request, POST, GET and DELETE alike (authorization §Token Requirements).
    if (config.token !== undefined) headers.authorization = `Bearer ${config.token}`;
    this.#baseHeaders = headers;
  }

  /** POSTs one JSON-RPC message (its serialised text) with the protocol headers given. */
  post(body: string, protocolHeaders: Record<string, string>, signal: AbortSource): Promise<HttpExchange> {
    // One header object per POST, built in place: this runs for every message.
    const headers = Object.assign({}, this.#baseHeaders, protocolHeaders);
    headers['content-type'] = 'application/json';
    headers.accept = ACCEPT_BOTH;
    return sendHttp(this.#dispatcher, { method: 'POST', url: this.url, headers, body, signal, toFailure: (error) => this.failure(error, signal) });
  }

  /** Opens a GET event stream (legacy listen stream, or resumption with Last-Event-ID). */
  get(protocolHeaders: Record<string, string>, signal: AbortSource): Promise<HttpExchange> {
    return this.#send('GET', { ...protocolHeaders, accept: 'text/event-stream' }, signal);
  }

  delete(protocolHeaders: Record<string, string>, signal: AbortSource): Promise<HttpExchange> {
    return this.#send('DELETE', protocolHeaders, signal);
  }

  /** Classifies a failure seen while reading a reply, with the proxy named where one is used. */
  failure(error: unknown, signal: AbortSource | undefined): BridgeError {
    return toBridgeError(error, signal, { url: this.url, proxy: this.#proxy });
  }

  async #send(method: HttpMethod, headers: Record<string, string>, signal: AbortSource, body?: string): Promise<HttpExchange> {
    const options = { method, url: this.url, headers: { ...this.#baseHeaders, ...headers }, signal };
    try {
      return await sendHttp(this.#dispatcher, body === undefined ? options : { ...options, body });
    } catch (error) {
      throw this.failure(error, signal);
    }
  }
}
