// A JSON-RPC client for shell commands: runs the bridge in-process over two PassThrough streams and speaks MCP to it.

import { PassThrough } from 'node:stream';
import { runBridge, type BridgeExit, type BridgeOptions } from '../bridge.js';
import { BRIDGE_ERRORS } from '../core/errors.js';
import type { Logger } from '../logging/logger.js';
import { errorReply, isJsonObject, type JsonObject, type JsonRpcId } from '../core/json-rpc.js';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, MODERN_VERSION, MODERN_VERSION_META_KEY, SESSION_VERSION, type Era } from '../core/protocol.js';

/** A JSON-RPC error answer; `fromBridge` when the bridge wrote it itself (the server was not reached or not understood). */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
    readonly data: unknown,
  ) {
    super(message);
  }

  /** The bridge's stable code (`REMOTE_UNREACHABLE`…) when the bridge answered instead of the server. */
  get bridgeCode(): string | undefined {
    const code = isJsonObject(this.data) ? this.data.bridgeCode : undefined;
    return typeof code === 'string' && code in BRIDGE_ERRORS ? code : undefined;
  }

  /** What the command found that may fix it (a known name near a mistyped one), said under the error. */
  suggestion: string | undefined;

  /** The bridge's hint on what to do, when it gave one. */
  get hint(): string | undefined {
    const hint = isJsonObject(this.data) ? this.data.hint : undefined;
    return typeof hint === 'string' ? hint : undefined;
  }
}

/**
 * server/discover answers after which `initialize` is still tried: besides the -32601 of a 2025
 * server, an HTTP error or an unusable reply, which 2025 servers give for a method they do not know
 * (a 500, an HTML page). A credential refused, a server not reached, a deadline: initialize would
 * meet the same, so those are the answer.
 */
const DISCOVER_MAY_FALL_BACK: ReadonlySet<string> = new Set(['METHOD_NOT_FOUND', 'REMOTE_HTTP_STATUS', 'REMOTE_BAD_REPLY']);

/** Thrown into a request that Ctrl-C stopped: the call was cancelled, not failed (or never sent). */
export class Interrupted extends Error {
  override readonly name = 'Interrupted';
  constructor(
    readonly method: string,
    readonly sent: boolean,
  ) {
    super(`${method} was ${sent ? 'cancelled' : 'not sent: interrupted'}`);
  }
}

/** How long a request goes without an answer or progress before the command says it is still waiting. */
export const STILL_WAITING_MS = 5_000;

export interface Progress {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

export interface RequestOptions {
  /** Asks for progress (a progress token in `_meta`) and receives each `notifications/progress`. */
  onProgress?: (progress: Progress) => void;
  /** Aborting it cancels the request: the bridge posts `notifications/cancelled` (2025) or closes the stream (2026-07-28). */
  signal?: AbortSignal | undefined;
}

export interface ClientOptions extends Omit<BridgeOptions, 'input' | 'output' | 'signal'> {
  clientInfo: { name: string; version: string };
  /** Where progress lines go without a terminal; the bridge's `logger` otherwise. */
  progressLogger?: Logger;
  /** Log lines the server sends (`notifications/message`). */
  onServerLog?: (level: string, data: unknown) => void;
  /** A request went STILL_WAITING_MS without an answer or progress: said once for that request. */
  onStillWaiting?: (method: string) => void;
}

interface Pending {
  method: string;
  resolve: (result: JsonObject) => void;
  reject: (error: Error) => void;
}

/**
 * One MCP client connection through an in-process bridge, so eras, sessions, credentials, deadlines
 * and error mapping are the bridge's own. `open()` picks the era the way a dual-era client does.
 */
export class ShellClient {
  readonly #input = new PassThrough();
  readonly #output = new PassThrough();
  readonly #pending = new Map<number, Pending>();
  readonly #progress = new Map<string, (progress: Progress) => void>();
  readonly #options: ClientOptions;
  readonly #exited: Promise<BridgeExit>;
  #nextId = 0;
  #buffer = '';
  #era: Era = 'legacy';
  /** The server's capabilities, from `server/discover` or `initialize`. */
  capabilities: JsonObject = {};

  constructor(options: ClientOptions) {
    this.#options = options;
    this.#output.setEncoding('utf8');
    this.#output.on('data', (chunk: string) => this.#onData(chunk));
    // The bridge stops when its input ends (close()), so its own stop signal is never needed here.
    // The commands read every page of a list themselves (commands.ts listAll, bounded and said
    // when it stops), so the bridge under them hands on each page as the server sent it.
    const config = { ...options.config, mergePages: false };
    this.#exited = runBridge({ ...options, config, input: this.#input, output: this.#output, signal: new AbortController().signal }).finally(() => {
      // Whatever is still waiting gets an answer, so no command can hang on a request the bridge dropped.
      /* c8 ignore next 4 -- the bridge answers every request before it returns; this guards against a bug there */
      for (const [id, pending] of this.#pending) {
        this.#pending.delete(id);
        pending.reject(
          new RpcError(pending.method, BRIDGE_ERRORS.SHUTTING_DOWN.rpcCode, 'the bridge stopped before answering', { bridgeCode: 'SHUTTING_DOWN' }),
        );
      }
    });
  }

  get era(): Era {
    return this.#era;
  }

  /**
   * 2026-07-28 first: `server/discover` (a dual-era client SHOULD probe with it, 2026-07-28 stdio
   * §Backward Compatibility). A server that refuses it, or does not list 2026-07-28, gets the 2025
   * `initialize` handshake. A failure to reach the server is not a refusal: it is thrown.
   */
  async open(signal?: AbortSignal): Promise<void> {
    let discoverFailure: RpcError | undefined;
    try {
      this.#era = 'modern';
      const discovered = await this.request('server/discover', {}, { signal });
      const versions = discovered.supportedVersions;
      if (Array.isArray(versions) && versions.includes(MODERN_VERSION)) {
        this.capabilities = isJsonObject(discovered.capabilities) ? discovered.capabilities : {};
        return;
      }
    } catch (error) {
      if (!(error instanceof RpcError) || (error.bridgeCode !== undefined && !DISCOVER_MAY_FALL_BACK.has(error.bridgeCode))) throw error;
      if (error.bridgeCode !== 'METHOD_NOT_FOUND') discoverFailure = error;
    }
    this.#era = 'legacy';
    let initialized: JsonObject;
    try {
      initialized = await this.request('initialize', { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: this.#options.clientInfo }, { signal });
    } catch (error) {
      // A server that took neither is reported by its first answer (a failed fallback reports
      // the original error): the server/discover one, unless that only said "not this era".
      throw discoverFailure ?? error;
    }
    this.capabilities = isJsonObject(initialized.capabilities) ? initialized.capabilities : {};
    this.notify('notifications/initialized');
  }

  /** Sends a request; resolves with its result, rejects with RpcError (an error answer) or Interrupted. */
  request(method: string, params: JsonObject = {}, options: RequestOptions = {}): Promise<JsonObject> {
    const id = ++this.#nextId;
    const meta: JsonObject = {};
    if (this.#era === 'modern') {
      // 2026-07-28 basic §Request `_meta`: every request names its version and capabilities, no handshake.
      meta[MODERN_VERSION_META_KEY] = MODERN_VERSION;
      meta[CLIENT_CAPABILITIES_META_KEY] = {};
      meta[CLIENT_INFO_META_KEY] = this.#options.clientInfo;
    }
    const { onProgress, signal } = options;
    const progressToken = onProgress === undefined ? undefined : `fenbs-mcp-progress-${id}`;
    if (progressToken !== undefined) meta.progressToken = progressToken;
    const message = { jsonrpc: '2.0', id, method, params: Object.keys(meta).length === 0 ? params : { ...params, _meta: meta } };
    return new Promise<JsonObject>((resolve, reject) => {
      const onStillWaiting = this.#options.onStillWaiting;
      const waiting = onStillWaiting === undefined || signal?.aborted === true ? undefined : setTimeout(() => onStillWaiting(method), STILL_WAITING_MS);
      waiting?.unref();
      const settle = () => {
        clearTimeout(waiting);
        this.#pending.delete(id);
        if (progressToken !== undefined) this.#progress.delete(progressToken);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        settle();
        // The bridge turns this into the era's cancellation: a POSTed notification (2025 basic
        // utilities §Cancellation) or the closed response stream (2026-07-28 transports §Cancellation).
        // 2025-06-18 basic/utilities/cancellation: initialize MUST NOT be cancelled; its answer is simply not awaited.
        if (method !== 'initialize') this.notify('notifications/cancelled', { requestId: id, reason: 'interrupted by the user (Ctrl-C)' });
        reject(new Interrupted(method, true));
      };
      if (signal?.aborted === true) {
        reject(new Interrupted(method, false));
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      // Progress is an answer of sorts: the server is working, so the command need not say it waits.
      if (progressToken !== undefined && onProgress !== undefined)
        this.#progress.set(progressToken, (update) => {
          clearTimeout(waiting);
          onProgress(update);
        });
      this.#pending.set(id, {
        method,
        resolve: (result) => (settle(), resolve(result)),
        reject: (error) => (settle(), reject(error)),
      });
      this.#send(message);
    });
  }

  notify(method: string, params?: JsonObject): void {
    this.#send(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params });
  }

  /** Ends the bridge's input: it finishes what is in flight (a cancellation included) and ends a 2025 session. */
  async close(): Promise<void> {
    if (!this.#input.writableEnded) this.#input.end();
    await this.#exited;
  }

  #send(message: JsonObject): void {
    if (!this.#input.writableEnded) this.#input.write(`${JSON.stringify(message)}\n`);
  }

  #onData(chunk: string): void {
    const lines = (this.#buffer + chunk).split('\n');
    this.#buffer = lines.pop()!; // split always returns at least one element
    for (const line of lines) {
      // The bridge writes only JSON-RPC objects, one per line (it builds or checks each one).
      this.#onMessage(JSON.parse(line) as JsonObject);
    }
  }

  #onMessage(message: JsonObject): void {
    const { id, method, params } = message;
    if (typeof method === 'string') {
      // The bridge passes on only requests whose id is a string or a number.
      if (id !== undefined) return this.#answerServerRequest(id as JsonRpcId, method);
      if (method === 'notifications/progress' && isJsonObject(params)) return this.#onProgress(params);
      if (method === 'notifications/message' && isJsonObject(params)) this.#options.onServerLog?.(String(params.level), params.data);
      return undefined;
    }
    const pending = this.#pending.get(id as number);
    if (pending === undefined) return undefined;
    if (isJsonObject(message.error)) {
      const { code, message: text, data } = message.error;
      pending.reject(new RpcError(pending.method, Number(code), String(text), data));
    } else {
      pending.resolve(isJsonObject(message.result) ? message.result : {});
    }
    return undefined;
  }

  #onProgress(params: JsonObject): void {
    const { progressToken, progress, total, message } = params;
    const handler = this.#progress.get(String(progressToken));
    if (handler === undefined || typeof progress !== 'number') return;
    handler({ progress, total: typeof total === 'number' ? total : undefined, message: typeof message === 'string' ? message : undefined });
  }

  /** A 2025 server may ask the client things; a shell command offers nothing but `ping` (2025 basic utilities §Ping). */
  #answerServerRequest(id: JsonRpcId, method: string): void {
    if (method === 'ping') this.#send({ jsonrpc: '2.0', id, result: {} });
    else this.#send(errorReply(id, -32601, `Method not found: fenbs-mcp shell commands do not offer ${method}`));
  }
}
