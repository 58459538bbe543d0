// Speaks 2026-07-28 to a server that speaks nothing else, on behalf of a 2025-era client on stdin.

import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { BridgeError, isBridgeError } from '../core/errors.js';
import {
  bridgeErrorReply,
  errorReply,
  idKey,
  isJsonObject,
  modernVersionOf,
  toLoggedId,
  type IncomingMessage,
  type JsonObject,
  type JsonRpcId,
} from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import type { EarlyRefusal } from '../core/json-scan.js';
import {
  inputFloodRefusal,
  inputRequestsExceeded,
  inputRequiredOf,
  isInitializeRefusal,
  listenFilterFor,
  speaksOnlyModern,
  toClientProfile,
  toInitializeResult,
  toModernParams,
  toRetryParams,
  whyClientCannotAnswer,
  type ClientProfile,
} from './translate-messages.js';
import { MODERN_VERSION } from '../core/protocol.js';

/**
 * `input_required` rounds one request may take before the bridge gives up on it: MRTR has the
 * client retry until the result is complete (2026-07-28 basic/patterns/mrtr §Client Requirements (Basic Workflow))
 * and sets no bound, so a server that never completes would otherwise hold the request forever.
 */
export const MAX_INPUT_ROUNDS = 16;

/**
 * Waits before reopening the list-change subscription after it ended, one per attempt; past the
 * last the bridge gives up. An attempt that got the server's acknowledgement starts the count again.
 */
export const LISTEN_REOPEN_DELAYS_MS = [1_000, 5_000, 30_000] as const;

/** The 2025 logging levels (2025-06-18 server/utilities/logging §Log Levels), the values `logging/setLevel` takes. */
const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);

type RequestMessage = Extract<IncomingMessage, { kind: 'request' }>;
type OtherMessage = Exclude<IncomingMessage, { kind: 'request' }>;
type Write = (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;

export interface EraTranslatorDeps {
  /** Writes to stdout (the client). */
  write: Write;
  /** Sends a request to the server and settles it (the forwarder); its reply comes back through `write`. */
  send: (request: RequestMessage) => Promise<void>;
  /** Stops a request the bridge sent: its exchange is aborted, so its response stream closes. */
  cancel: (id: JsonRpcId) => void;
  /** Runs a task the bridge waits for at shutdown. */
  track: (task: Promise<unknown>) => void;
  logger: Logger;
  /** How long the client may take to answer an input request, in ms; 0 = no bound. */
  requestTimeoutMs: number;
}

/** A client request the bridge answers itself or through translated rounds; it gets exactly one reply. */
interface Translated {
  readonly id: JsonRpcId;
  readonly method: string;
  answered: boolean;
  cancelled: boolean;
  /** The id of the request in flight to the server for it, if any. */
  current: string | undefined;
  /** The input requests written to the client and not yet answered: id → how to end the wait. */
  readonly waits: Map<string, (outcome: JsonObject | BridgeError) => void>;
}

type State = 'undecided' | 'legacy' | 'translating';

// node:crypto (some twenty modules) is loaded when the bridge mints its first id, not at every start.
const requireBuiltin = createRequire(import.meta.url);

export class EraTranslator {
  readonly #deps: EraTranslatorDeps;
  /**
   * Every id the bridge mints starts with this; the random part keeps them apart from any client's.
   * Made with the first id: before that no reply can carry it.
   */
  #idPrefix: string | undefined;
  #counter = 0;
  #state: State = 'undecided';
  /** The client's initialize while its answer is outstanding. */
  #initialize: { id: JsonRpcId; profile: ClientProfile } | undefined;
  #profile: ClientProfile = { protocolVersion: MODERN_VERSION, capabilities: {}, clientInfo: undefined };
  #listenFilter: JsonObject | undefined;
  #logLevel: string | undefined;
  /** Aborted when stdin ends or the bridge stops: the subscription is not reopened after that. */
  readonly #stopping = new AbortController();
  /** Set when the server acknowledges the subscription: the attempt was real progress. */
  #listenAcknowledged = false;
  /** Requests the bridge sent, by id: receives the reply instead of the client. */
  readonly #calls = new Map<string, (reply: JsonObject) => void>();
  readonly #requests = new Map<string, Translated>();
  /** Input requests written to the client, by id. */
  readonly #inputs = new Map<string, (outcome: JsonObject | BridgeError) => void>();

  constructor(deps: EraTranslatorDeps) {
    this.#deps = deps;
  }

  #prefix(): string {
    this.#idPrefix ??= `fenbs-mcp-${(requireBuiltin('node:crypto') as typeof Crypto).randomUUID().slice(0, 8)}-`;
    return this.#idPrefix;
  }

  /**
   * Takes a request from stdin when translation handles it; undefined when it goes to the server
   * as it is (a 2025 server, a 2026-07-28 client, or anything before the era is known).
   */
  request(incoming: RequestMessage): Promise<void> | undefined {
    const { method, message } = incoming;
    if (this.#state === 'legacy' || modernVersionOf(message) !== undefined) return undefined;
    if (this.#state === 'undecided') {
      // Watched, not changed: its reply decides the era.
      if (method === 'initialize' && this.#initialize === undefined) this.#initialize = { id: incoming.id, profile: toClientProfile(message.params) };
      return undefined;
    }
    switch (method) {
      case 'initialize':
        return this.#local(incoming, async (t) => this.#handshake(t, toClientProfile(message.params)));
      case 'ping':
        // A ping must still prove the server is alive: one server/discover round trip
        // (2025-06-18 basic/utilities/ping; 2026-07-28 has no ping, server/discover is the cheapest request).
        return this.#local(incoming, async (t) => {
          const reply = await this.#call('server/discover', this.#discoverParams(this.#profile), t);
          if (reply !== undefined) await this.#answer(t, isJsonObject(reply.error) ? reply : { jsonrpc: '2.0', id: t.id, result: {} });
        });
      case 'logging/setLevel':
        return this.#local(incoming, (t) => this.#setLevel(t, message.params));
      default:
        return this.#translate(incoming);
    }
  }

  /** Whether request() or other() may read or rewrite this message's tree (not only its routing facts). */
  readsWhole(incoming: RequestMessage | OtherMessage): boolean {
    if (incoming.kind === 'response') return typeof incoming.id === 'string' && this.#inputs.has(incoming.id);
    return this.#state !== 'legacy' && modernVersionOf(incoming.message) === undefined;
  }

  /** Takes a notification or response from stdin when translation handles it; undefined otherwise. */
  other(incoming: OtherMessage): Promise<void> | undefined {
    if (incoming.kind === 'response') {
      const finish = typeof incoming.id === 'string' ? this.#inputs.get(incoming.id) : undefined;
      if (finish !== undefined) {
        finish(incoming.message);
        return Promise.resolve();
      }
      if (this.#state !== 'translating') return undefined;
      this.#deps.logger.warn({ id: toLoggedId(incoming.id) }, 'the client answered a request the bridge did not send; dropped');
      return Promise.resolve();
    }
    if (this.#state !== 'translating' || modernVersionOf(incoming.message) !== undefined) return undefined;
    switch (incoming.method) {
      case 'notifications/initialized':
        // 2026-07-28 has no handshake to complete; the list-change subscription starts now, as a
        // 2025 server only sends notifications once initialized (2025-06-18 lifecycle §Initialization).
        if (this.#listenFilter !== undefined) {
          const filter = this.#listenFilter;
          this.#listenFilter = undefined;
          this.#deps.track(this.#listen(filter));
        }
        break;
      case 'notifications/cancelled':
        this.#cancel(isJsonObject(incoming.message.params) ? incoming.message.params.requestId : undefined);
        break;
      default:
        // 2026-07-28 servers take no client notifications over HTTP besides these (roots changes
        // are asked per request through MRTR instead).
        this.#deps.logger.debug({ method: incoming.method }, 'a 2025 notification with no 2026-07-28 counterpart; not sent');
    }
    return Promise.resolve();
  }

  /**
   * The way to stdout: replies to the bridge's own requests stop here, the reply to the client's
   * initialize is where the era is decided, and the rest goes to the client.
   */
  readonly write: Write = (message, serialised) => {
    const id = message.id;
    if (typeof id === 'string' && this.#idPrefix !== undefined && id.startsWith(this.#idPrefix)) {
      const capture = this.#calls.get(id);
      if (capture !== undefined) {
        capture(message);
        return Promise.resolve(true);
      }
      // A late reply to a request of the bridge's own: the client never sent it.
      if (!('method' in message)) return Promise.resolve(true);
    }
    const initialize = this.#initialize;
    if (initialize !== undefined && !('method' in message) && typeof id === typeof initialize.id && id === initialize.id) {
      this.#initialize = undefined;
      return this.#decide(message, serialised, initialize);
    }
    // The first message of a listen stream acknowledges the bridge's own subscription (2026-07-28
    // basic/patterns/subscriptions); a 2025 client has no such notification.
    if (this.#state === 'translating' && message.method === 'notifications/subscriptions/acknowledged') {
      this.#listenAcknowledged = true;
      this.#deps.logger.info('list-change subscription open: the list changes the server declared reach the client');
      return Promise.resolve(true);
    }
    return this.#deps.write(message, serialised);
  };

  /** Stdin ended: the client can no longer answer input requests, so the requests waiting on one end. */
  inputEnded(error: BridgeError): void {
    this.#stopping.abort();
    for (const t of this.#requests.values()) void this.#abandon(t, error);
  }

  /** Shutdown: every request still without its reply gets `error`. */
  async close(error: BridgeError): Promise<void> {
    this.#stopping.abort();
    const open = [...this.#requests.values()];
    await Promise.all(open.map((t) => this.#abandon(t, error)));
    await Promise.all(open.filter((t) => !t.cancelled).map((t) => this.#answer(t, bridgeErrorReply(t.id, error))));
  }

  /**
   * The client's initialize was answered. A server that answers it is a 2025 (or dual-era) server
   * and is never translated ("Legacy | Dual-era: Works", 2026-07-28 versioning §Compatibility
   * Matrix). A refusal is translated only when server/discover shows a server that speaks only
   * 2026-07-28, the case the matrix says fails because "legacy clients have no fall-forward
   * mechanism"; otherwise the refusal is the client's answer, unchanged.
   */
  async #decide(reply: JsonObject, serialised: string | Buffer | undefined, initialize: { id: JsonRpcId; profile: ClientProfile }): Promise<boolean> {
    if (!isInitializeRefusal(reply)) {
      if ('result' in reply) this.#state = 'legacy';
      return this.#deps.write(reply, serialised);
    }
    // Nothing else is outstanding before the era is known, so the record is the only one with this id.
    const t = this.#record(initialize.id, 'initialize');
    try {
      // The bridge's own requests never throw: a failed server/discover is a reply, and the refusal stands.
      if (!(await this.#handshake(t, initialize.profile, reply))) await this.#answer(t, reply, serialised);
    } finally {
      this.#requests.delete(idKey(t.id));
    }
    return true;
  }

  /**
   * Answers initialize from server/discover (2026-07-28 server/discover: capabilities, server info,
   * instructions). With `refusal`, only when the server speaks only 2026-07-28; returns whether it answered.
   */
  async #handshake(t: Translated, profile: ClientProfile, refusal?: JsonObject): Promise<boolean> {
    const reply = await this.#call('server/discover', this.#discoverParams(profile), t);
    if (reply === undefined) return true; // cancelled or shutting down: answered elsewhere
    const discover = isJsonObject(reply.result) ? reply.result : undefined;
    if (refusal !== undefined && (discover === undefined || !speaksOnlyModern(discover))) {
      this.#deps.logger.debug({ versions: discover?.supportedVersions }, 'initialize refused, but the server is not 2026-07-28-only: the refusal is forwarded');
      return false;
    }
    if (discover === undefined) {
      await this.#answer(t, reply);
      return true;
    }
    if (this.#state !== 'translating') {
      this.#deps.logger.info(
        { clientVersion: profile.protocolVersion, serverVersions: discover.supportedVersions },
        'the server speaks only 2026-07-28: translating for this 2025-era client',
      );
    }
    this.#state = 'translating';
    this.#profile = profile;
    this.#listenFilter = listenFilterFor(discover.capabilities);
    await this.#answer(t, { jsonrpc: '2.0', id: t.id, result: toInitializeResult(discover, profile) });
    return true;
  }

  #discoverParams(profile: ClientProfile): JsonObject {
    return toModernParams({}, profile, undefined);
  }

  /**
   * `logging/setLevel` becomes the per-request level every later request carries (2026-07-28
   * server/utilities/logging: `io.modelcontextprotocol/logLevel` in `_meta` replaces it).
   */
  async #setLevel(t: Translated, params: unknown): Promise<void> {
    const level = isJsonObject(params) ? params.level : undefined;
    if (typeof level !== 'string' || !LOG_LEVELS.has(level)) {
      await this.#answer(t, errorReply(t.id, -32602, `Invalid params: level must be one of ${[...LOG_LEVELS].join(', ')}`));
      return;
    }
    this.#logLevel = level;
    await this.#answer(t, { jsonrpc: '2.0', id: t.id, result: {} });
  }

  /**
   * One client request as 2026-07-28 rounds: each round is a new request with a new id (mrtr
   * §Client Requirements: "The JSON-RPC id MUST be different"); an `input_required` result becomes
   * 2025 requests to the client, whose answers go into the next round.
   */
  #translate(incoming: RequestMessage): Promise<void> {
    return this.#local(incoming, async (t) => {
      const params = toModernParams(incoming.message.params, this.#profile, this.#logLevel);
      let round = params;
      for (let rounds = 0; ; rounds++) {
        const reply = await this.#call(incoming.method, round, t, inputFloodRefusal(incoming.method));
        if (reply === undefined || t.cancelled) return;
        const input = inputRequiredOf(reply);
        if (input === undefined) {
          await this.#answer(t, reply);
          return;
        }
        if (rounds + 1 >= MAX_INPUT_ROUNDS) {
          throw new BridgeError(
            'INPUT_ROUNDS_EXCEEDED',
            `the server asked for input ${MAX_INPUT_ROUNDS} times for one ${incoming.method}; the bridge gave up`,
            {
              method: incoming.method,
              limit: MAX_INPUT_ROUNDS,
            },
          );
        }
        if (input.tooMany !== undefined) throw inputRequestsExceeded(incoming.method);
        const inputResponses = await this.#askClient(t, input.inputRequests);
        if (t.cancelled) return;
        round = toRetryParams(params, inputResponses, input.requestState);
      }
    });
  }

  /** Runs `work` for a client request with the exactly-one-reply guarantee. */
  async #local(incoming: RequestMessage, work: (t: Translated) => Promise<unknown>): Promise<void> {
    const t = this.#open(incoming.id, incoming.method);
    if (t === undefined) {
      await this.#deps.write(
        errorReply(incoming.id, -32600, 'Invalid Request: this id is already used by a request that is still outstanding', { bridgeCode: 'INVALID_REQUEST' }),
      );
      return;
    }
    try {
      await work(t);
    } catch (error) {
      if (!t.cancelled) {
        const failure = isBridgeError(error) ? error : new BridgeError('INTERNAL', (error as Error).message);
        this.#deps.logger.warn({ method: t.method, id: toLoggedId(t.id), code: failure.code }, failure.message);
        await this.#answer(t, bridgeErrorReply(t.id, failure));
      }
    } finally {
      await this.#abandon(t, new BridgeError('INTERNAL', 'the request ended'));
      if (!t.answered && !t.cancelled)
        await this.#answer(t, bridgeErrorReply(t.id, new BridgeError('INTERNAL', `the bridge finished ${t.method} without an answer`)));
      this.#requests.delete(idKey(t.id));
    }
  }

  /** Ends the client's open input requests with `error`, telling the client they are cancelled. */
  async #abandon(t: Translated, error: BridgeError): Promise<void> {
    for (const [inputId, finish] of [...t.waits]) {
      finish(error);
      // The bridge issued it, so the bridge cancels it (2025-06-18 basic/utilities/cancellation).
      await this.#deps.write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: inputId, reason: error.message } });
    }
  }

  /** A record for a client request; undefined when its id is still outstanding (ids must be unique, 2025-06-18 basic §Requests). */
  #open(id: JsonRpcId, method: string): Translated | undefined {
    return this.#requests.has(idKey(id)) ? undefined : this.#record(id, method);
  }

  #record(id: JsonRpcId, method: string): Translated {
    const t: Translated = { id, method, answered: false, cancelled: false, current: undefined, waits: new Map() };
    this.#requests.set(idKey(id), t);
    return t;
  }

  async #answer(t: Translated, reply: JsonObject, serialised?: string | Buffer): Promise<void> {
    if (t.answered) return;
    t.answered = true;
    // The reply of a round carries the round's id; the client gets it under its own.
    if (reply.id === t.id) await this.#deps.write(reply, serialised);
    else await this.#deps.write({ ...reply, id: t.id });
  }

  /** Sends one request of the bridge's own; resolves with its reply, or undefined when it was cancelled. */
  async #call(method: string, params: JsonObject, t: Translated | undefined, refuseEarly?: EarlyRefusal): Promise<JsonObject | undefined> {
    const id = `${this.#prefix()}${++this.#counter}`;
    const message = { jsonrpc: '2.0', id, method, params };
    let reply: JsonObject | undefined;
    this.#calls.set(id, (value) => (reply = value));
    if (t !== undefined) t.current = id;
    try {
      await this.#deps.send({ kind: 'request', id, method, message, body: JSON.stringify(message), ...(refuseEarly === undefined ? {} : { refuseEarly }) });
    } finally {
      this.#calls.delete(id);
      if (t !== undefined) t.current = undefined;
    }
    return reply;
  }

  /**
   * Writes each embedded input request as the 2025 server-to-client request it stands for and
   * collects the client's results under the server's keys (mrtr §InputResponses: bare results).
   * Anything the client cannot answer ends the request before anything is written.
   */
  async #askClient(t: Translated, inputRequests: JsonObject): Promise<JsonObject> {
    const entries = Object.entries(inputRequests);
    for (const [key, request] of entries) {
      const why = whyClientCannotAnswer(request, this.#profile.capabilities);
      if (why !== undefined) {
        throw new BridgeError('INPUT_UNAVAILABLE', `the server needs input for ${t.method} that this client cannot give: ${why}`, {
          method: t.method,
          inputKey: key,
          hint: 'use a client that supports this feature, or a 2026-07-28 client',
        });
      }
    }
    const answers = await Promise.all(entries.map(([key, request]) => this.#ask(t, request as JsonObject).then((result) => [key, result] as const)));
    return Object.fromEntries(answers);
  }

  /** One request to the client; resolves with its result, rejects with its error, a deadline or a cancel. */
  #ask(t: Translated, request: JsonObject): Promise<JsonObject> {
    const id = `${this.#prefix()}input-${++this.#counter}`;
    const method = String(request.method);
    const { requestTimeoutMs } = this.#deps;
    return new Promise<JsonObject>((resolve, reject) => {
      const finish = (outcome: JsonObject | BridgeError) => {
        if (timer !== undefined) clearTimeout(timer);
        this.#inputs.delete(id);
        t.waits.delete(id);
        if (isBridgeError(outcome)) reject(outcome);
        else if (isJsonObject(outcome.result)) resolve(outcome.result);
        else {
          const error = isJsonObject(outcome.error) ? outcome.error : {};
          reject(
            new BridgeError('INPUT_UNAVAILABLE', `the client answered ${method} with an error: ${String(error.message)}`, {
              method: t.method,
              clientError: error,
            }),
          );
        }
      };
      const timer =
        requestTimeoutMs > 0
          ? setTimeout(() => {
              finish(
                new BridgeError('REQUEST_TIMEOUT', `the client did not answer ${method} within ${requestTimeoutMs} ms`, {
                  method: t.method,
                  timeoutMs: requestTimeoutMs,
                }),
              );
              void this.#deps.write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'timed out' } });
            }, requestTimeoutMs).unref()
          : undefined;
      this.#inputs.set(id, finish);
      t.waits.set(id, finish);
      void this.#deps.write({ jsonrpc: '2.0', id, method, params: isJsonObject(request.params) ? request.params : {} });
    });
  }

  /**
   * The client cancelled a request (2025-06-18 basic/utilities/cancellation). Over 2026-07-28
   * Streamable HTTP, closing the request's stream is the cancellation (transports §Cancellation),
   * so the round in flight is aborted; a wait for the client's input ends. Nothing is written for it.
   */
  #cancel(requestId: unknown): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const t = this.#requests.get(idKey(requestId));
    // initialize MUST NOT be cancelled (2025-06-18 basic/utilities/cancellation).
    if (t === undefined || t.method === 'initialize' || t.answered) return;
    t.cancelled = true;
    if (t.current !== undefined) this.#deps.cancel(t.current);
    void this.#abandon(t, new BridgeError('INTERNAL', 'the client cancelled the request'));
    this.#deps.logger.debug({ id: toLoggedId(t.id) }, 'translated request cancelled by the client');
  }

  /**
   * Opens `subscriptions/listen` for the list changes the server declared, so its
   * `notifications/*\/list_changed` reach the client (2026-07-28 basic/patterns/subscriptions). It
   * stays open until the bridge stops; when the server ends it or it breaks (a modern stream cannot
   * be resumed, so it is opened anew), it is reopened after a delay, a bounded number of times.
   */
  async #listen(filter: JsonObject): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      this.#listenAcknowledged = false;
      const reply = await this.#call('subscriptions/listen', { ...this.#discoverParams(this.#profile), notifications: filter }, undefined);
      if (this.#stopping.signal.aborted) return;
      if (this.#listenAcknowledged) attempt = 0;
      const error = reply !== undefined && isJsonObject(reply.error) ? reply.error : undefined;
      const why = error === undefined ? 'the server ended it' : String(error.message);
      // A server without the method will not grow it: asking again is pointless.
      const delayMs = error?.code === -32601 ? undefined : LISTEN_REOPEN_DELAYS_MS[attempt];
      if (delayMs === undefined) {
        this.#deps.logger.warn(
          { attempts: attempt },
          `the list-change subscription ended (${why}) and could not be reopened; list changes no longer reach the client`,
        );
        return;
      }
      this.#deps.logger.info({ delayMs }, `the list-change subscription ended (${why}); reopening it`);
      try {
        await sleep(delayMs, undefined, { signal: this.#stopping.signal });
      } catch {
        return; // stopping
      }
    }
  }
}
