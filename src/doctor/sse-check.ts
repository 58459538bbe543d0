// Doctor's checks of a server on the 2024-11-05 HTTP+SSE transport: the event stream, its endpoint, initialize and tools/list, through the bridge's own transport.

import { pino } from 'pino';
import type { BridgeConfig } from '../config/config.js';
import { BridgeError } from '../core/errors.js';
import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { maskUrl, type Redactor } from '../logging/redactor.js';
import type { Reach } from '../connection.js';
import { connectPipeline } from '../pipeline/connect.js';

/** The revision the 2024-11-05 transport's clients offer in initialize. */
const SSE_VERSION = '2024-11-05';
const CLIENT_INFO = { name: 'fenbs-mcp-doctor', version: '1' };

/** One line of doctor's report (doctor.ts `Check`). */
interface CheckLine {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

export interface SseCheckOptions {
  config: BridgeConfig;
  /** The run's dispatcher, credential and endpoint, as every command reaches the server. */
  reach: Reach;
  redact: Redactor;
  /** Each exchange's deadline, as for the other doctor requests. */
  timeoutMs: number;
  add: (check: CheckLine) => boolean;
  begin: (name: string, doing: string) => void;
  /** Set to the revision the server answered initialize with. */
  onRevision: (revision: string) => void;
}

/**
 * Opens the stream and talks to the server exactly as the bridge would: the bridge's own pipeline
 * over its HTTP+SSE transport (with its endpoint rule), collecting the replies instead of writing
 * them to stdout. Adds the `transport`
 * check (and, once it is open, `protocol` and `tools`); false when the URL offers no such stream,
 * with the reason, so the caller can say so.
 */
export async function checkSseTransport(options: SseCheckOptions): Promise<{ ok: boolean; error?: BridgeError }> {
  const { config, reach, add, begin } = options;
  const replies = new Map<string, JsonObject>();
  const write = (message: JsonObject): Promise<boolean> => {
    if (typeof message.id === 'string') replies.set(message.id, message);
    return Promise.resolve(true);
  };
  const logger = pino({ level: 'silent' }, { write: () => undefined });
  const connection = connectPipeline(reach.endpoint, {
    config: { ...config, transport: 'sse', requestTimeoutMs: options.timeoutMs },
    logger,
    redact: options.redact,
    write,
    room: () => undefined,
  });
  const sse = connection.sse!;
  let ids = 0;
  const ask = async (method: string, params: JsonObject): Promise<JsonObject> => {
    const id = `fenbs-mcp-doctor-sse-${++ids}`;
    const message = { jsonrpc: '2.0', id, method, params };
    await connection.forwarder.forwardRequest({ kind: 'request', id, method, message, body: JSON.stringify(message) });
    return replies.get(id) ?? {};
  };
  begin('transport', `GET ${maskUrl(config.url)} (Accept: text/event-stream), waiting for its endpoint event`);
  try {
    let messages: URL;
    try {
      messages = await sse.connect();
    } catch (error) {
      return { ok: false, error: reach.endpoint.failure(error, undefined) };
    }
    add({ name: 'transport', ok: true, detail: `HTTP+SSE (2024-11-05): event stream at ${maskUrl(config.url)}, messages posted to ${maskUrl(messages)}` });
    begin('protocol', `initialize (${SSE_VERSION}) over HTTP+SSE`);
    const init = await ask('initialize', { protocolVersion: SSE_VERSION, capabilities: {}, clientInfo: CLIENT_INFO });
    if (!isJsonObject(init.result) || typeof init.result.protocolVersion !== 'string') {
      add({ name: 'protocol', ok: false, ...detailOf(init, 'initialize'), hint: hintOf(init) });
      return { ok: true };
    }
    options.onRevision(init.result.protocolVersion);
    const info = isJsonObject(init.result.serverInfo) ? init.result.serverInfo : {};
    add({
      name: 'protocol',
      ok: true,
      detail: `${init.result.protocolVersion} (initialize handshake over HTTP+SSE); server ${typeof info.name === 'string' ? info.name : 'unnamed'}; capabilities ${Object.keys(isJsonObject(init.result.capabilities) ? init.result.capabilities : {}).join(', ') || 'none'}`,
    });
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
    await connection.forwarder.forwardOther({
      kind: 'notification',
      method: 'notifications/initialized',
      message: initialized,
      body: JSON.stringify(initialized),
    });
    begin('tools', 'tools/list over HTTP+SSE');
    const list = await ask('tools/list', {});
    if (isJsonObject(list.result) && Array.isArray(list.result.tools)) {
      add({ name: 'tools', ok: true, detail: `${list.result.tools.length} tool${list.result.tools.length === 1 ? '' : 's'} listed` });
    } else {
      add({ name: 'tools', ok: false, ...detailOf(list, 'tools/list'), hint: hintOf(list) });
    }
    return { ok: true };
  } finally {
    await connection.inFlight.failAll(new BridgeError('SHUTTING_DOWN', 'doctor is done'));
    await connection.close(0);
  }
}

function detailOf(reply: JsonObject, method: string): { detail: string } {
  const error = isJsonObject(reply.error) ? reply.error : undefined;
  return { detail: `${method} failed: ${typeof error?.message === 'string' ? error.message : 'no answer'}` };
}

function hintOf(reply: JsonObject): string {
  const data = isJsonObject(reply.error) && isJsonObject(reply.error.data) ? reply.error.data : undefined;
  return typeof data?.hint === 'string' ? data.hint : 'the server took the event stream but not the request; check its logs';
}
