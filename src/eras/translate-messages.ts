// Pure conversions between a 2025-era client's messages and their 2026-07-28 form, and back.

import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { BridgeError } from '../core/errors.js';
import { countObjectMembers, scanJson, type EarlyRefusal } from '../core/json-scan.js';
import { memberBytesOf } from '../core/lazy-object.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  MODERN_VERSION,
  MODERN_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '../core/protocol.js';

/**
 * JSON-RPC codes with which a 2026-07-28-only server refuses a 2025 `initialize`: -32022
 * UnsupportedProtocolVersion (2026-07-28 versioning §Protocol Version Negotiation), -32601 Method
 * not found (what a server without the method answers, over HTTP with a 404), -32020
 * HeaderMismatch (the 2025 POST lacks the SEP-2243 headers, over HTTP with a 400).
 */
const REFUSAL_CODES = new Set([-32022, -32601, -32020]);
/** HTTP statuses of a refusal whose body is not a JSON-RPC error (the bridge then reports the status). */
const REFUSAL_STATUSES = new Set([400, 404]);

/** What a 2025-era client said about itself in its `initialize`. */
export interface ClientProfile {
  protocolVersion: string;
  capabilities: JsonObject;
  clientInfo: JsonObject | undefined;
}

export function toClientProfile(params: unknown): ClientProfile {
  const p = isJsonObject(params) ? params : {};
  return {
    protocolVersion: typeof p.protocolVersion === 'string' ? p.protocolVersion : MODERN_VERSION,
    capabilities: isJsonObject(p.capabilities) ? p.capabilities : {},
    clientInfo: isJsonObject(p.clientInfo) ? p.clientInfo : undefined,
  };
}

/** True when the reply to a 2025 `initialize` is one of the refusals a 2026-07-28-only server gives. */
export function isInitializeRefusal(reply: JsonObject): boolean {
  const error = reply.error;
  if (!isJsonObject(error)) return false;
  if (typeof error.code === 'number' && REFUSAL_CODES.has(error.code)) return true;
  const data = isJsonObject(error.data) ? error.data : {};
  return data.bridgeCode === 'REMOTE_HTTP_STATUS' && typeof data.status === 'number' && REFUSAL_STATUSES.has(data.status);
}

/**
 * True when a `server/discover` result says the server speaks only 2026-07-28: it lists that
 * version and no 2025 one (2026-07-28 server/discover §DiscoverResult `supportedVersions`). A
 * server that lists a 2025 revision is a dual-era server and is never translated.
 */
export function speaksOnlyModern(discover: JsonObject): boolean {
  const versions = Array.isArray(discover.supportedVersions) ? discover.supportedVersions.filter((v): v is string => typeof v === 'string') : [];
  return versions.includes(MODERN_VERSION) && !versions.some((version) => version.startsWith('2025-'));
}

/**
 * The 2025 InitializeResult built from a `server/discover` result: capabilities, server info and
 * instructions come from the server; the protocol version is the one the client asked for, since
 * the bridge speaks that revision to it (2025-06-18 lifecycle §Version Negotiation).
 */
export function toInitializeResult(discover: JsonObject, profile: ClientProfile): JsonObject {
  const meta = isJsonObject(discover._meta) ? discover._meta : {};
  const serverInfo = isJsonObject(meta[SERVER_INFO_META_KEY]) ? meta[SERVER_INFO_META_KEY] : { name: 'unknown', version: '0' };
  const result: JsonObject = { protocolVersion: profile.protocolVersion, capabilities: toLegacyCapabilities(discover.capabilities), serverInfo };
  if (typeof discover.instructions === 'string') result.instructions = discover.instructions;
  return result;
}

/**
 * Server capabilities as a 2025 client may use them. `resources.subscribe` is dropped: 2026-07-28
 * replaced `resources/subscribe` with the listen stream's filter (2026-07-28 changelog), which this
 * bridge does not map, so the client must not be told it can subscribe.
 */
function toLegacyCapabilities(value: unknown): JsonObject {
  const capabilities = isJsonObject(value) ? { ...value } : {};
  if (isJsonObject(capabilities.resources) && 'subscribe' in capabilities.resources) {
    const { subscribe: _dropped, ...resources } = capabilities.resources;
    capabilities.resources = resources;
  }
  return capabilities;
}

/**
 * The `notifications` filter of the `subscriptions/listen` that brings the list changes the server
 * declared (2026-07-28 basic/patterns/subscriptions); undefined when it declared none.
 */
export function listenFilterFor(capabilities: unknown): JsonObject | undefined {
  const c = isJsonObject(capabilities) ? capabilities : {};
  const declares = (name: string) => isJsonObject(c[name]) && c[name].listChanged === true;
  const filter: JsonObject = {};
  if (declares('tools')) filter.toolsListChanged = true;
  if (declares('prompts')) filter.promptsListChanged = true;
  if (declares('resources')) filter.resourcesListChanged = true;
  return Object.keys(filter).length > 0 ? filter : undefined;
}

/**
 * The `_meta` every translated request carries: the version, the client's capabilities and info
 * from its `initialize` (2026-07-28 basic §Request `_meta`: the version and capabilities are
 * required on every request, the info SHOULD be), and the log level the client set, which replaces
 * `logging/setLevel` (2026-07-28 server/utilities/logging: without it the server sends no
 * `notifications/message` for the request). The client's own keys (progressToken, trace context)
 * are kept.
 */
export function toModernParams(params: unknown, profile: ClientProfile, logLevel: string | undefined): JsonObject {
  const p = isJsonObject(params) ? params : {};
  const meta: JsonObject = isJsonObject(p._meta) ? { ...p._meta } : {};
  meta[MODERN_VERSION_META_KEY] = MODERN_VERSION;
  meta[CLIENT_CAPABILITIES_META_KEY] = profile.capabilities;
  if (profile.clientInfo !== undefined) meta[CLIENT_INFO_META_KEY] = profile.clientInfo;
  if (logLevel !== undefined) meta[LOG_LEVEL_META_KEY] = logLevel;
  return { ...p, _meta: meta };
}

/**
 * The params of an MRTR retry: the original params plus the client's answers and the exact
 * `requestState`, omitted when the server gave none; these fields belong to this retry only
 * (2026-07-28 basic/patterns/mrtr §Client Requirements (Basic Workflow)).
 */
export function toRetryParams(params: JsonObject, inputResponses: JsonObject, requestState: string | undefined): JsonObject {
  const retry: JsonObject = { ...params, inputResponses };
  if (requestState !== undefined) retry.requestState = requestState;
  return retry;
}

/**
 * Input requests one `input_required` result may carry. Real servers ask for one thing at a time
 * (an elicitation, a sampling, the roots), a few at most; each becomes a request to the client and
 * a wait, so a result of thousands is a server flooding the client, refused before any is built.
 */
export const MAX_INPUT_REQUESTS_PER_ROUND = 64;

/** The refusal of a round whose result asks for more than MAX_INPUT_REQUESTS_PER_ROUND inputs. */
export function inputRequestsExceeded(method: string): BridgeError {
  return new BridgeError(
    'INPUT_REQUESTS_EXCEEDED',
    `the server asked for more than ${MAX_INPUT_REQUESTS_PER_ROUND} inputs at once for one ${method}; the bridge asks the client for at most ${MAX_INPUT_REQUESTS_PER_ROUND} in a round`,
    { method, limit: MAX_INPUT_REQUESTS_PER_ROUND },
  );
}

/**
 * Refuses a large round's result as soon as it has shown itself to be `input_required` with more
 * than MAX_INPUT_REQUESTS_PER_ROUND input requests, so a flood at the message limit is never read
 * whole (nor held: its bytes would cost as much memory as the limit). A result that names its
 * `resultType` only after the requests, or spells it with escapes, is read whole and judged after,
 * as is one under the size a reader scans. An object's names are unique in the JSON the spec
 * speaks (RFC 8259 §4 SHOULD; I-JSON, RFC 7493 §2.3, MUST), so the first `inputRequests` past the
 * bound is the one that counts.
 */
export function inputFloodRefusal(method: string): EarlyRefusal {
  return {
    watch: { inside: 'result', text: 'resultType', count: 'inputRequests' },
    refusal: (facts) => (facts.text === 'input_required' && facts.count > MAX_INPUT_REQUESTS_PER_ROUND ? inputRequestsExceeded(method) : undefined),
  };
}

/**
 * An `input_required` result (2026-07-28 basic §ResultType, mrtr §InputRequiredResult); undefined
 * otherwise. `tooMany` (the count, past MAX_INPUT_REQUESTS_PER_ROUND) when it asks for more: a
 * large result is then counted from its bytes and never decoded.
 */
export function inputRequiredOf(
  reply: JsonObject,
): { inputRequests: JsonObject; requestState: string | undefined; tooMany?: undefined } | { tooMany: number } | undefined {
  const raw = memberBytesOf(reply, 'result');
  if (raw !== undefined) {
    const scan = scanJson(raw);
    if (scan.kind !== 'object') return undefined;
    const kind = scan.members.find((member) => member.key === 'resultType');
    if (kind?.value !== 'input_required') return undefined;
    const requests = scan.members.filter((member) => member.key === 'inputRequests').at(-1);
    if (requests !== undefined && !requests.small) {
      const count = countObjectMembers(raw.subarray(requests.start, requests.start + requests.size), MAX_INPUT_REQUESTS_PER_ROUND);
      if (count > MAX_INPUT_REQUESTS_PER_ROUND) return { tooMany: count };
    }
  }
  const result = reply.result;
  if (!isJsonObject(result) || result.resultType !== 'input_required') return undefined;
  const inputRequests = isJsonObject(result.inputRequests) ? result.inputRequests : {};
  const count = Object.keys(inputRequests).length;
  if (count > MAX_INPUT_REQUESTS_PER_ROUND) return { tooMany: count };
  return { inputRequests, requestState: typeof result.requestState === 'string' ? result.requestState : undefined };
}

/**
 * Why the client cannot answer one embedded input request, or undefined when it can. The three
 * kinds map to the 2025 server-to-client requests of the same method (2026-07-28 mrtr: MRTR
 * replaces them), each only if the client declared the capability in its `initialize` (2025-06-18
 * client/elicitation, client/sampling, client/roots §Capabilities). URL-mode elicitation has no
 * 2025 shape: 2025-11-25 requires an `elicitationId` and a completion notification the 2026-07-28
 * form does not have.
 */
export function whyClientCannotAnswer(request: unknown, capabilities: JsonObject): string | undefined {
  if (!isJsonObject(request) || typeof request.method !== 'string') return 'the input request is not a request object';
  const params = isJsonObject(request.params) ? request.params : {};
  switch (request.method) {
    case 'elicitation/create':
      if (!isJsonObject(capabilities.elicitation)) return 'the client did not declare the elicitation capability';
      if (params.mode !== undefined && params.mode !== 'form')
        return `elicitation mode ${JSON.stringify(params.mode)} has no 2025-era form the bridge can send`;
      return undefined;
    case 'sampling/createMessage':
      if (!isJsonObject(capabilities.sampling)) return 'the client did not declare the sampling capability';
      if (params.tools !== undefined && !isJsonObject(capabilities.sampling.tools)) return 'the client did not declare sampling with tools';
      return undefined;
    case 'roots/list':
      return isJsonObject(capabilities.roots) ? undefined : 'the client did not declare the roots capability';
    default:
      return `${request.method} has no 2025-era server-to-client request`;
  }
}
