// The stations between a checked message and the server, made in one place for every command: in-flight table, router, tool filter, eras, the transport --transport names, the page merger, and the forwarder above it.

import type { BridgeConfig } from '../config/config.js';
import type { JsonObject } from '../core/json-rpc.js';
import type { Endpoint } from '../http/endpoint.js';
import { LegacySession } from '../eras/legacy-session.js';
import { ModernEra } from '../eras/modern-era.js';
import { ToolHeaderRegistry } from '../eras/tool-headers.js';
import type { Logger } from '../logging/logger.js';
import type { Redactor } from '../logging/redactor.js';
import { AutomaticTransport } from '../transports/automatic.js';
import { HttpSseTransport } from '../transports/http-sse.js';
import { StreamableHttpTransport } from '../transports/streamable-http.js';
import type { Transport } from '../transports/transport.js';
import { Forwarder } from './forwarder.js';
import { InFlight } from './in-flight.js';
import { PageMerger } from './page-merger.js';
import { Router } from './router.js';
import { ToolFilter } from './tool-filter.js';

export interface PipelineOptions {
  config: BridgeConfig;
  logger: Logger;
  redact: Redactor;
  /** Where every answer and server message goes: stdout's writer (through the era translator), or a collector. */
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  /** Back-pressure from the writer: replies are not read further while this returns a promise. */
  room: () => Promise<void> | undefined;
  /** Where a tool filter that matches nothing is said; `logger.warn` otherwise. */
  warn?: ((message: string) => void) | undefined;
}

/** The pipeline of a run over the transport its config names. */
export interface Connection {
  readonly forwarder: Forwarder;
  readonly inFlight: InFlight;
  /** The 2024-11-05 HTTP+SSE transport, where --transport lets the run use it (doctor opens its stream on its own). */
  readonly sse: HttpSseTransport | undefined;
  /** Shutdown has begun: nothing is kept alive from now on. */
  beginShutdown(): void;
  /** Ends the transports: the 2025 session's DELETE within `graceMs`, the HTTP+SSE stream. */
  close(graceMs: number): Promise<void>;
}

/**
 * The pipeline over `endpoint` (made by connection.ts reachServer): the transport --transport names
 * (auto: Streamable HTTP, falling back to HTTP+SSE on the first refused POST) below the forwarder
 * that owns each request.
 */
export function connectPipeline(endpoint: Endpoint, options: PipelineOptions): Connection {
  const { config, logger, redact, write, room } = options;
  const inFlight = new InFlight({ write, requestTimeoutMs: config.requestTimeoutMs });
  const toolFilter = ToolFilter.from(config);
  const router = new Router({ inFlight, write, logger, toolFilter, ...(options.warn === undefined ? {} : { warn: options.warn }) });
  const legacy = new LegacySession({
    endpoint,
    logger,
    maxMessageBytes: config.maxMessageBytes,
    onServerMessage: (message, serialised) => router.route(message, serialised),
    room,
    keepAliveMs: config.keepAliveMs,
    redact,
  });
  const modern = new ModernEra({ endpoint, tools: new ToolHeaderRegistry(toolFilter), logger, maxMessageBytes: config.maxMessageBytes, redact });
  const streamable = new StreamableHttpTransport({ config, endpoint, legacy, modern, sink: router, room, logger, redact });
  const sse = config.transport === 'streamable-http' ? undefined : new HttpSseTransport({ config, endpoint, sink: router, room, logger, redact });
  const automatic = config.transport === 'auto' && sse !== undefined ? new AutomaticTransport({ streamable, sse, logger }) : undefined;
  // The Streamable HTTP transport is made either way; with --transport sse it is never used, so
  // it has no session to close.
  const transport: Transport = automatic ?? sse ?? streamable;
  // A page's cancel goes the way a client's does: the forwarder cancels it and posts it where the era says.
  const cancelPage = (id: string): Promise<void> => {
    const message = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: id, reason: 'the client cancelled the list this page is part of' },
    };
    return forwarder.forwardOther({ kind: 'notification', method: 'notifications/cancelled', message, body: JSON.stringify(message) });
  };
  const pages = config.mergePages
    ? new PageMerger({ transport, inFlight, sink: router, logger, maxMessageBytes: config.maxMessageBytes, cancel: cancelPage })
    : undefined;
  const forwarder = new Forwarder({ transport, endpoint, inFlight, write, logger, toolFilter, requestTimeoutMs: config.requestTimeoutMs, pages });
  return {
    forwarder,
    inFlight,
    sse,
    beginShutdown: () => transport.beginShutdown(),
    close: (graceMs) => transport.close(graceMs),
  };
}
