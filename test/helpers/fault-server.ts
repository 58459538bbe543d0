// A scriptable fake MCP endpoint on loopback (node:http), and a raw TCP one for wire faults.

import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** One HTTP request as the server saw it. */
export interface FaultRequest {
  /** HTTP method: POST, GET, DELETE. */
  method: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the raw text when it is not JSON); undefined without a body. */
  body: any;
  /** The JSON-RPC method and id of a POSTed message, for scripting. */
  rpcMethod: string | undefined;
  id: string | number | undefined;
}

/** What one request gets back. */
export type Reply =
  /** A JSON body (default status 200, content type application/json). */
  | { kind: 'json'; body: unknown; status?: number; headers?: Record<string, string> }
  /** Any status with a body as given. */
  | { kind: 'status'; status: number; body: string; contentType?: string; headers?: Record<string, string> }
  /** A text/event-stream reply: each step is written as given, or waited for; the stream then ends. */
  | { kind: 'sse'; steps: readonly (string | { waitMs: number })[] }
  /** Headers never come: the request hangs until the client gives up. */
  | { kind: 'stall' }
  /** Headers with a Content-Length, part of the body, then the socket is destroyed. */
  | { kind: 'cut'; status?: number; contentType: string; body: string; declaredBytes: number }
  /** The TCP connection is reset before any byte of the reply. */
  | { kind: 'reset' }
  /** Full control, for tests that orchestrate many replies (the response is left to `handle`). */
  | { kind: 'custom'; handle: (res: ServerResponse) => void };

export type Script = (request: FaultRequest) => Reply;

/** The result `initialize` gets unless told otherwise: the client's version, no capabilities. */
export function initializeResult(request: FaultRequest): unknown {
  const version = request.body?.params?.protocolVersion ?? '2025-06-18';
  return { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'fault-server', version: '1.0.0' } };
}

/** A JSON-RPC result for `request`; by default it echoes the params, so tests can check what arrived. */
export function resultFor(request: FaultRequest, result: unknown = { echo: request.body?.params ?? null }): Reply {
  return { kind: 'json', body: { jsonrpc: '2.0', id: request.id, result } };
}

/** An SSE event carrying one JSON-RPC message. */
export function sseEvent(message: unknown, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** What an unscripted request gets: initialize answered, notifications accepted, requests echoed. */
function defaultReply(request: FaultRequest, sessionId: string | undefined): Reply {
  if (request.method !== 'POST') return { kind: 'status', status: 405, body: '', headers: { allow: 'POST' } };
  if (request.id === undefined) return { kind: 'status', status: 202, body: '' };
  if (request.rpcMethod === 'initialize') {
    const body = { jsonrpc: '2.0', id: request.id, result: initializeResult(request) };
    return { kind: 'json', body, headers: sessionId === undefined ? {} : { 'mcp-session-id': sessionId } };
  }
  return resultFor(request);
}

function parseBody(text: string): Pick<FaultRequest, 'body' | 'rpcMethod' | 'id'> {
  if (text === '') return { body: undefined, rpcMethod: undefined, id: undefined };
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return { body: text, rpcMethod: undefined, id: undefined };
  }
  const rpcMethod = typeof body?.method === 'string' ? (body.method as string) : undefined;
  const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? (body.id as string | number) : undefined;
  return { body, rpcMethod, id };
}

/** The scripting and recording both servers share. */
class Scripts {
  readonly requests: FaultRequest[] = [];
  readonly #events = new EventEmitter();
  readonly #once = new Map<string, Script[]>();
  readonly #always = new Map<string, Script>();

  next(rpcMethod: string, script: Script): void {
    const queue = this.#once.get(rpcMethod) ?? [];
    queue.push(script);
    this.#once.set(rpcMethod, queue);
  }

  every(rpcMethod: string, script: Script): void {
    this.#always.set(rpcMethod, script);
  }

  received(predicate: (request: FaultRequest) => boolean, count: number): Promise<FaultRequest[]> {
    const matching = () => this.requests.filter(predicate);
    if (matching().length >= count) return Promise.resolve(matching());
    return new Promise((resolve) => {
      const check = () => {
        if (matching().length < count) return;
        this.#events.off('request', check);
        resolve(matching());
      };
      this.#events.on('request', check);
    });
  }

  replyFor(request: FaultRequest, sessionId: string | undefined): Reply {
    this.requests.push(request);
    this.#events.emit('request');
    const key = request.rpcMethod ?? request.method;
    const script = this.#once.get(key)?.shift() ?? this.#always.get(key);
    return script === undefined ? defaultReply(request, sessionId) : script(request);
  }
}

export interface FaultServerOptions {
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Mint this session id on initialize (default: no session). */
  sessionId?: string;
}

export interface FaultServer {
  /** http://127.0.0.1:<port>/mcp */
  url: string;
  /** Every request received, in arrival order. */
  requests: FaultRequest[];
  /** Scripts the reply to the next request whose JSON-RPC method (or HTTP method for GET/DELETE) is `rpcMethod`. */
  next(rpcMethod: string, script: Script): void;
  /** Scripts the reply to every such request not covered by `next`. */
  every(rpcMethod: string, script: Script): void;
  /** Resolves once `count` received requests match `predicate`. */
  received(predicate: (request: FaultRequest) => boolean, count?: number): Promise<FaultRequest[]>;
  close(): Promise<void>;
}

async function listen(server: Server, port: number): Promise<number> {
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** Starts the scriptable node:http endpoint. */
export async function startFaultServer(options: FaultServerOptions = {}): Promise<FaultServer> {
  const scripts = new Scripts();
  const timers = new Set<NodeJS.Timeout>();
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => (timers.delete(timer), resolve()), ms);
      timers.add(timer);
    });

  const respond = async (reply: Reply, res: ServerResponse): Promise<void> => {
    switch (reply.kind) {
      case 'json':
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(reply.body));
        return;
      case 'status':
        res.writeHead(reply.status, { ...(reply.contentType === undefined ? {} : { 'content-type': reply.contentType }), ...reply.headers }).end(reply.body);
        return;
      case 'sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.flushHeaders();
        for (const step of reply.steps) {
          if (res.destroyed) return;
          if (typeof step === 'string') res.write(step);
          else await wait(step.waitMs);
        }
        res.end();
        return;
      case 'stall':
        return;
      case 'cut':
        res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType, 'content-length': String(reply.declaredBytes) });
        res.write(reply.body, () => res.destroy());
        return;
      case 'reset':
        res.socket?.resetAndDestroy();
        return;
      case 'custom':
        reply.handle(res);
        return;
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', headers: req.headers, ...parseBody(Buffer.concat(chunks).toString('utf8')) };
      respond(scripts.replyFor(request, options.sessionId), res).catch(() => res.destroy());
    });
  });
  const port = await listen(server, options.port ?? 0);

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests: scripts.requests,
    next: (method, script) => scripts.next(method, script),
    every: (method, script) => scripts.every(method, script),
    received: (predicate, count = 1) => scripts.received(predicate, count),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.close();
      server.closeAllConnections();
      await once(server, 'close');
    },
  };
}

/** What the raw server can do to a request, byte by byte. */
export type RawReply =
  /** A well-formed HTTP/1.1 JSON response (Content-Length, keep-alive). */
  | { kind: 'json'; body: unknown }
  /** RST instead of a response: not a single byte of headers. */
  | { kind: 'reset' }
  /** Chunked 200 response whose body stops mid-chunk, without the terminating chunk, then FIN. */
  | { kind: 'truncated-chunked'; contentType: string; body: string };

export type RawScript = (request: FaultRequest) => RawReply;

export interface RawServer {
  url: string;
  requests: FaultRequest[];
  next(rpcMethod: string, script: RawScript): void;
  close(): Promise<void>;
}

const HEADER_END = '\r\n\r\n';

function parseRawHead(head: string): { method: string; headers: IncomingHttpHeaders } {
  const [requestLine = '', ...lines] = head.split('\r\n');
  const headers: IncomingHttpHeaders = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { method: requestLine.split(' ')[0] ?? '', headers };
}

function writeRaw(socket: Socket, reply: RawReply): void {
  switch (reply.kind) {
    case 'json': {
      const body = Buffer.from(JSON.stringify(reply.body));
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n`);
      socket.write(body);
      return;
    }
    case 'reset':
      socket.resetAndDestroy();
      return;
    case 'truncated-chunked': {
      const body = Buffer.from(reply.body);
      // Announce twice the bytes that follow, so the chunk itself is cut, then close the connection.
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: ${reply.contentType}\r\ntransfer-encoding: chunked\r\n\r\n${(body.length * 2).toString(16)}\r\n`);
      socket.end(body);
      return;
    }
  }
}

/**
 * Starts a TCP server that speaks just enough HTTP/1.1 (Content-Length request bodies, keep-alive)
 * to answer requests normally, and to break the wire exactly where a test says.
 */
export async function startRawServer(): Promise<RawServer> {
  const scripts = new Map<string, RawScript[]>();
  const requests: FaultRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const headEnd = buffer.indexOf(HEADER_END);
        if (headEnd === -1) return;
        const { method, headers } = parseRawHead(buffer.subarray(0, headEnd).toString('latin1'));
        const length = Number(headers['content-length'] ?? 0);
        const bodyStart = headEnd + HEADER_END.length;
        if (buffer.length < bodyStart + length) return;
        const request = { method, headers, ...parseBody(buffer.subarray(bodyStart, bodyStart + length).toString('utf8')) };
        buffer = buffer.subarray(bodyStart + length);
        requests.push(request);
        const script = scripts.get(request.rpcMethod ?? method)?.shift();
        if (script !== undefined) writeRaw(socket, script(request));
        else if (request.id === undefined) socket.write('HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n');
        else
          writeRaw(socket, {
            kind: 'json',
            body: {
              jsonrpc: '2.0',
              id: request.id,
              result: request.rpcMethod === 'initialize' ? initializeResult(request) : { echo: request.body?.params ?? null },
            },
          });
        if (socket.destroyed) return;
      }
    });
  });
  const port = await listen(server, 0);
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    next(rpcMethod, script) {
      scripts.set(rpcMethod, [...(scripts.get(rpcMethod) ?? []), script]);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
