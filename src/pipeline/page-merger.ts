// Answers a tools/list or prompts/list without a cursor with every page the server has, merged, for hosts that read only the first page.

import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { CANCELLED, untilAborted } from '../core/abort.js';
import { BridgeError } from '../core/errors.js';
import { bridgeErrorReply, isJsonObject, toLoggedId, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import type { RequestMessage, ServerMessageSink, Transport } from '../transports/transport.js';
import type { InFlight, PendingRequest } from './in-flight.js';

/**
 * Requests one merged list may cost, its first page included. The cursor is opaque and a server may
 * page at any size (basic/utilities/pagination), so nothing else bounds how many pages it claims;
 * a list that goes on past this is answered with what was merged and the cursor where it goes on.
 */
export const MAX_MERGED_PAGES = 100;

/**
 * The lists merged, and the member of their result that holds the items. resources/list and
 * resources/templates/list are not: hosts browse them a page at a time, and a server may hold
 * more resources than any one reply should carry.
 */
export const MERGED_LISTS: ReadonlyMap<string, string> = new Map([
  ['tools/list', 'tools'],
  ['prompts/list', 'prompts'],
]);

export interface PageMergerDeps {
  transport: Transport;
  inFlight: InFlight;
  /** The router: the merged reply meets its request there, so the tool filter applies to the whole list. */
  sink: ServerMessageSink;
  logger: Logger;
  /** --max-message-bytes: the merged reply stays within it. */
  maxMessageBytes: number;
  /** Cancels one of the merger's own page requests as a client's cancel would be (posted in 2025, the stream closed in 2026-07-28). */
  cancel: (id: string) => Promise<void>;
}

/** One page as the server answered it. */
interface Page {
  reply: JsonObject;
  serialised: string | Buffer | undefined;
}

/** Why a merge ended before the server's last page; the reply then carries the cursor where the list goes on. */
type Stop = { why: string; cursor: string };

// node:crypto is loaded when the first page id is made, not at every start.
const requireBuiltin = createRequire(import.meta.url);

/**
 * Merges the pages of a list for one registered request. The first page is the client's request
 * as it came; each later one is a request of the bridge's own (its own id: a 2025 server must not
 * see an id twice in a session, basic §Requests). Every page's reply comes back here and never
 * reaches stdout; the request's own deadline and cancellation bound the whole merge, and its one
 * answer goes through the router like any other.
 */
export class PageMerger {
  readonly #deps: PageMergerDeps;
  #idPrefix: string | undefined;
  #counter = 0;

  constructor(deps: PageMergerDeps) {
    this.#deps = deps;
  }

  /** Whether `incoming` is a list request to merge: a merged list's first request, no cursor, read whole. */
  wants(incoming: RequestMessage): boolean {
    if (!MERGED_LISTS.has(incoming.method) || incoming.abridged === true) return false;
    const params = incoming.message.params;
    return params === undefined || (isJsonObject(params) && !('cursor' in params));
  }

  /** Asks for each page in turn and answers `pending` once: every page merged, a stop with its cursor, or the error that ended it. */
  async merge(pending: PendingRequest, incoming: RequestMessage): Promise<void> {
    const { logger, maxMessageBytes } = this.#deps;
    const key = MERGED_LISTS.get(incoming.method)!;
    const first = await this.#firstPage(pending, incoming);
    if (first === undefined) return;
    const firstResult = first.reply.result;
    // One page (the common case), an error, an input_required result or a list the bridge cannot
    // read: the server's reply is the answer, as it came.
    if (!isJsonObject(firstResult) || !Array.isArray(firstResult[key]) || !isComplete(firstResult) || nextCursorOf(firstResult) === undefined) {
      await this.#answer(pending, first.reply, first.serialised);
      return;
    }
    const list = new MergedList(key);
    const cursors = new Set<string>();
    let stop: Stop | undefined;
    let page: Page = first;
    let cursor: string | undefined;
    for (let count = 1; ; count++) {
      const result = page.reply.result;
      if (isJsonObject(result) && !isComplete(result)) {
        // Input the client was never asked for cannot be given here; the client asks for this
        // page itself, with its cursor, and answers its input rounds as for any request.
        stop = { why: `page ${count} asks for input (its result is not complete)`, cursor: cursor! };
        break;
      }
      if (!isJsonObject(result) || !Array.isArray(result[key])) {
        // A later page that failed fails the whole request: an answer that left out what the host
        // asked for, without saying so, would be read as the whole list.
        await this.#answer(pending, isJsonObject(page.reply.error) ? { ...page.reply, id: pending.id } : this.#broken(pending, incoming.method, count));
        return;
      }
      // A page that cannot be serialised counts as too large: nothing may follow it.
      const size = sizeOf(page) ?? Number.POSITIVE_INFINITY;
      if (count > 1 && list.bytes + size > maxMessageBytes) {
        stop = { why: `page ${count} would take the merged reply past --max-message-bytes (${maxMessageBytes})`, cursor: cursor! };
        break;
      }
      const added = list.add(result, size);
      const next = nextCursorOf(result);
      if (next === undefined) break;
      if (added === 0) stop = { why: `page ${count} added nothing`, cursor: next };
      else if (cursors.has(next)) stop = { why: `page ${count} repeats a cursor`, cursor: next };
      else if (count >= MAX_MERGED_PAGES) stop = { why: `the list goes on past ${MAX_MERGED_PAGES} pages (MAX_MERGED_PAGES)`, cursor: next };
      if (stop !== undefined) break;
      cursors.add(next);
      cursor = next;
      const following = await this.#page(pending, incoming, next);
      if (following === undefined) return;
      page = following;
    }
    if (list.duplicates > 0)
      logger.warn(
        { method: incoming.method, id: toLoggedId(pending.id), duplicates: list.duplicates },
        'the server listed a name again on a later page; the first kept',
      );
    if (stop !== undefined) {
      logger.warn(
        { method: incoming.method, id: toLoggedId(pending.id), items: list.items.length },
        `merging the pages stopped: ${stop.why}; the client gets what was merged and the cursor where the list goes on`,
      );
    }
    await this.#answer(pending, { jsonrpc: '2.0', id: pending.id, result: list.result(firstResult, stop?.cursor) });
  }

  /** The answer goes through the router, where the tool filter applies to the merged list. */
  #answer(pending: PendingRequest, reply: JsonObject, serialised?: string | Buffer): Promise<void> {
    return this.#deps.sink.answer(pending, reply, serialised);
  }

  #broken(pending: PendingRequest, method: string, count: number): JsonObject {
    const failure = new BridgeError('REMOTE_BAD_REPLY', `page ${count} of ${method} is not a list result`, { method });
    this.#deps.logger.warn({ method, id: toLoggedId(pending.id), code: failure.code }, failure.message);
    return bridgeErrorReply(pending.id, failure);
  }

  /**
   * The first page is the client's request itself, as it came (its id, its body): its reply is
   * held here instead of written. Undefined when the request was answered otherwise meanwhile (a
   * malformed reply, its deadline, a cancel).
   */
  async #firstPage(pending: PendingRequest, incoming: RequestMessage): Promise<Page | undefined> {
    let page: Page | undefined;
    pending.hold((reply, serialised) => (page = { reply, serialised }));
    await this.#deps.transport.request(pending, incoming);
    if (pending.done) return undefined;
    if (page === undefined) throw new BridgeError('INTERNAL', `the bridge finished the first page of ${incoming.method} without an answer`);
    return page;
  }

  /**
   * A following page, asked under an id of the bridge's own with the client's params (and `cursor`); its
   * reply is kept here. Undefined when `pending` was answered meanwhile (its deadline, a cancel,
   * shutdown): its exchange is stopped, and a cancel reaches the server as the era says.
   */
  async #page(pending: PendingRequest, incoming: RequestMessage, cursor: string): Promise<Page | undefined> {
    if (pending.done) return undefined;
    const { inFlight, transport } = this.#deps;
    const id = this.#nextId();
    const params = isJsonObject(incoming.message.params) ? incoming.message.params : {};
    const message: JsonObject = { ...incoming.message, id, params: { ...params, cursor } };
    let page: Page | undefined;
    const deliver = (reply: JsonObject, serialised?: string | Buffer) => {
      page = { reply, serialised };
      return Promise.resolve(true);
    };
    const request = inFlight.begin(id, incoming.method, pending.era, { deadline: false, own: pending.own, deliver });
    if (request === undefined) throw new BridgeError('INTERNAL', `the bridge's page id ${id} is already in use`);
    const stop = () => {
      if (pending.aborts.reason === CANCELLED) void this.#deps.cancel(id);
      else inFlight.cancel(id);
    };
    pending.aborts.addEventListener('abort', stop);
    try {
      await untilAborted(transport.request(request, { kind: 'request', id, method: incoming.method, message, body: JSON.stringify(message) }), request.aborts);
    } catch (error) {
      if (pending.done) return undefined;
      throw error;
    } finally {
      pending.aborts.removeEventListener('abort', stop);
      if (!request.done) inFlight.cancel(id);
    }
    if (pending.done) return undefined;
    if (page === undefined) throw new BridgeError('INTERNAL', `the bridge finished a page of ${incoming.method} without an answer`);
    return page;
  }

  #nextId(): string {
    this.#idPrefix ??= `fenbs-mcp-page-${(requireBuiltin('node:crypto') as typeof Crypto).randomUUID().slice(0, 8)}-`;
    return `${this.#idPrefix}${++this.#counter}`;
  }
}

/** A result's nextCursor; anything but a string ends the list (the cursor is an opaque string, basic/utilities/pagination). */
function nextCursorOf(result: JsonObject): string | undefined {
  return typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
}

/** An absent resultType is "complete" (2026-07-28 basic §ResultType); anything else is a round the client must answer. */
function isComplete(result: JsonObject): boolean {
  return result.resultType === undefined || result.resultType === 'complete';
}

/** What a page adds to the merged reply, in bytes, never less: the page's own size. Undefined when it cannot be serialised. */
function sizeOf(page: Page): number | undefined {
  if (page.serialised !== undefined) return typeof page.serialised === 'string' ? Buffer.byteLength(page.serialised) : page.serialised.length;
  try {
    return Buffer.byteLength(JSON.stringify(page.reply));
  } catch {
    return undefined; // nested past the stack: no reply could carry it
  }
}

/** The items of the pages merged so far: each name once (the first kept), their bytes counted, their cache fields combined. */
class MergedList {
  readonly items: unknown[] = [];
  readonly #names = new Set<string>();
  readonly #cache = new CacheFields();
  /** Names dropped because an earlier page listed them. */
  duplicates = 0;
  /** The pages' own sizes summed: never less than what the merged reply takes. */
  bytes = 0;

  constructor(readonly key: string) {}

  /** Adds a page's items that are new; returns how many were (an item without a name always is). */
  add(result: JsonObject, size: number): number {
    this.bytes += size;
    this.#cache.add(result);
    let added = 0;
    for (const item of result[this.key] as unknown[]) {
      const name = isJsonObject(item) && typeof item.name === 'string' ? item.name : undefined;
      if (name !== undefined && this.#names.has(name)) {
        this.duplicates++;
        continue;
      }
      if (name !== undefined) this.#names.add(name);
      this.items.push(item);
      added++;
    }
    return added;
  }

  /** The merged result: the first page's other members, every item, the cache fields, and `nextCursor` only where the list goes on. */
  result(first: JsonObject, nextCursor: string | undefined): JsonObject {
    const merged: JsonObject = { ...first, [this.key]: this.items, ...this.#cache.fields() };
    delete merged.nextCursor;
    if (nextCursor !== undefined) merged.nextCursor = nextCursor;
    return merged;
  }
}

/**
 * The 2026-07-28 cache fields of a merged list (server/utilities/caching): the smallest `ttlMs`
 * (absent, negative or not a number counts as 0) and "private" if any page is private (or names a
 * scope the bridge does not know: the stricter reading). Added only where a page carried them.
 */
class CacheFields {
  #ttlMs = Number.POSITIVE_INFINITY;
  #private = false;
  #present = false;

  add(result: JsonObject): void {
    if ('ttlMs' in result || 'cacheScope' in result) this.#present = true;
    this.#ttlMs = Math.min(this.#ttlMs, typeof result.ttlMs === 'number' && Number.isFinite(result.ttlMs) && result.ttlMs > 0 ? result.ttlMs : 0);
    if (result.cacheScope !== 'public') this.#private = true;
  }

  fields(): JsonObject {
    return this.#present ? { ttlMs: this.#ttlMs, cacheScope: this.#private ? 'private' : 'public' } : {};
  }
}
