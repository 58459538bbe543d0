// Real loopback peers for the hardening tests: a scripted MCP server, a CONNECT proxy, test TLS certificates.

import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { initializedNotification, initializeRequest, type BridgeHandle, type BridgeProcess } from './spawn-bridge.js';

export interface RecordedRequest {
  method: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: string;
  /** The parsed body, or undefined when it is not JSON. */
  message: any;
  /** Resolves once the connection or response is closed; true when the client went away first. */
  closedByClient: Promise<boolean>;
}

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  message: any;
  record: RecordedRequest;
}

/** Handles a request itself and returns true, or returns false for the default MCP answer. */
export type Route = (context: RouteContext) => boolean | Promise<boolean>;

/** Runs on a raw accepted socket instead of HTTP (silent peer, reset on connect). */
export type ConnectionFault = (socket: Socket) => void;

export interface McpServerOptions {
  route?: Route;
  /** Issue an Mcp-Session-Id on initialize and answer 404 to unknown ones (2025-06-18 sessions). */
  sessions?: boolean;
  /** false: every response carries `Connection: close`, so each request opens a new connection. */
  keepAlive?: boolean;
  /** node:https server options; `requestCert` with `ca` makes it demand a client certificate. */
  tls?: { key: string; cert: string; ca?: string; requestCert?: boolean; rejectUnauthorized?: boolean };
  /** Listen on this port (a server coming back where it was). */
  port?: number;
}

export interface McpServer {
  url: URL;
  port: number;
  requests: RecordedRequest[];
  /** Applied to the next accepted connections, in order, before HTTP sees them. */
  connectionFaults: ConnectionFault[];
  /** Connections accepted so far. */
  readonly connections: number;
  /**
   * Connections still open that have carried a request. One the client opened and never used is
   * not counted: undici opens a fresh one in place of a connection whose body was aborted.
   * Plain HTTP only (with TLS the request's socket is not the accepted one).
   */
  readonly openConnections: number;
  /** Resolves once at most `count` connections are open, or rejects after `timeoutMs` saying how many are. */
  waitForOpenConnections(count: number, timeoutMs?: number): Promise<void>;
  /** POSTs whose JSON body has this id. */
  postsFor(id: unknown): RecordedRequest[];
  waitForRequest(predicate: (request: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  close(): Promise<void>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Writes `text` as an event-stream body, `chunkBytes` at a time, each chunk flushed on its own.
 * With `whole`, the body goes in one write with the head and the stream's end, so it reaches the
 * client in one read, as from a server that writes its events in one go.
 */
export async function sendSse(res: ServerResponse, text: string, options: { chunkBytes?: number; end?: boolean; whole?: boolean } = {}): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  if (options.whole === true) {
    await new Promise<void>((resolve) => res.end(text, resolve));
    return;
  }
  const bytes = Buffer.from(text, 'utf8');
  const size = options.chunkBytes ?? bytes.length;
  for (let offset = 0; offset < bytes.length && !res.destroyed; offset += size) {
    await new Promise<void>((resolve) => res.write(bytes.subarray(offset, offset + size), () => resolve()));
    if (size < bytes.length) await new Promise((resolve) => setImmediate(resolve));
  }
  if (options.end !== false) res.end();
}

/** `data:` lines of one SSE event carrying `message`. */
export function sseEvent(message: unknown, extra = ''): string {
  return `${extra}data: ${JSON.stringify(message)}\n\n`;
}

export function result(id: unknown, value: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, result: value };
}

/** The default answer: initialize, tools/call and anything else get a small result; the rest 202. */
function answerMcp(message: any, res: ServerResponse, sessionId: string | undefined): void {
  if (message?.method === undefined || message.id === undefined) {
    res.writeHead(202).end();
    return;
  }
  const headers: Record<string, string> = sessionId === undefined ? {} : { 'mcp-session-id': sessionId };
  if (message.method === 'initialize') {
    const value = {
      protocolVersion: message.params?.protocolVersion ?? '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name: 'hardening-server', version: '1.0.0' },
    };
    sendJson(res, 200, result(message.id, value), headers);
    return;
  }
  if (message.method === 'tools/list') {
    sendJson(res, 200, result(message.id, { tools: [] }));
    return;
  }
  const name = typeof message.params?.name === 'string' ? message.params.name : undefined;
  sendJson(res, 200, result(message.id, { content: [{ type: 'text', text: `ok ${name ?? message.method}` }] }));
}

export async function startMcpServer(options: McpServerOptions = {}): Promise<McpServer> {
  const requests: RecordedRequest[] = [];
  const connectionFaults: ConnectionFault[] = [];
  const sessions = new Set<string>();
  const sockets = new Set<Socket>();
  const usedSockets = new Set<Socket>();
  const closeWatchers = new Set<() => void>();
  let connections = 0;
  const waiters: { predicate: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }[] = [];

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (sockets.has(req.socket)) usedSockets.add(req.socket);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let message: any;
      try {
        message = JSON.parse(body);
      } catch {
        message = undefined;
      }
      const closedByClient = new Promise<boolean>((resolve) => res.on('close', () => resolve(!res.writableFinished)));
      const record: RecordedRequest = { method: req.method ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body, message, closedByClient };
      requests.push(record);
      for (const waiter of [...waiters]) {
        if (waiter.predicate(record)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(record);
        }
      }
      if (options.keepAlive === false) res.setHeader('connection', 'close');
      void respond(req, res, message, record);
    });
  };

  const respond = async (req: IncomingMessage, res: ServerResponse, message: any, record: RecordedRequest) => {
    if (options.route !== undefined && (await options.route({ req, res, message, record }))) return;
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const sent = req.headers['mcp-session-id'];
    if (options.sessions === true && message?.method !== 'initialize' && (typeof sent !== 'string' || !sessions.has(sent))) {
      sendJson(res, 404, { jsonrpc: '2.0', id: message?.id ?? null, error: { code: -32001, message: 'Session not found' } });
      return;
    }
    let sessionId: string | undefined;
    if (options.sessions === true && message?.method === 'initialize') {
      sessionId = randomUUID();
      sessions.add(sessionId);
    }
    answerMcp(message, res, sessionId);
  };

  const http: Server = options.tls === undefined ? createHttpServer(handler) : createHttpsServer(options.tls, handler);
  const front = createNetServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      usedSockets.delete(socket);
      for (const watcher of [...closeWatchers]) watcher();
    });
    const fault = connectionFaults.shift();
    if (fault !== undefined) fault(socket);
    else http.emit('connection', socket);
  });
  front.listen(options.port ?? 0, '127.0.0.1');
  await once(front, 'listening');
  const port = (front.address() as AddressInfo).port;
  const scheme = options.tls === undefined ? 'http' : 'https';

  return {
    url: new URL(`${scheme}://127.0.0.1:${port}/mcp`),
    port,
    requests,
    connectionFaults,
    get connections() {
      return connections;
    },
    get openConnections() {
      return usedSockets.size;
    },
    waitForOpenConnections: (count, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (usedSockets.size > count) return;
          closeWatchers.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          closeWatchers.delete(check);
          reject(new Error(`${usedSockets.size} connections still open after ${timeoutMs} ms; expected at most ${count}`));
        }, timeoutMs);
        closeWatchers.add(check);
        check();
      }),
    postsFor: (id) => requests.filter((r) => r.method === 'POST' && r.message?.id === id),
    waitForRequest: (predicate, timeoutMs = 10_000) => {
      const found = requests.find(predicate);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching request within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ predicate, resolve: (r) => (clearTimeout(timer), resolve(r)) });
      });
    },
    close: async () => {
      const closed = new Promise((resolve) => front.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Opens a session through `bridge` (initialize + initialized) and resolves once `server` has accepted it. */
export async function openSession<Bridge extends BridgeHandle>(bridge: Bridge, server: McpServer): Promise<Bridge> {
  bridge.send(initializeRequest(1));
  await bridge.reply(1);
  bridge.send(initializedNotification);
  await server.waitForRequest((r) => r.message?.method === 'notifications/initialized');
  return bridge;
}

/** A test file's servers and other things to stop: all closed newest first once the file's tests have run. */
export function serversForFile(): { serve: (options?: McpServerOptions) => Promise<McpServer>; track: (cleanup: () => unknown) => void } {
  const cleanups: (() => unknown)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  return {
    serve: async (options = {}) => {
      const server = await startMcpServer(options);
      cleanups.push(() => server.close());
      return server;
    },
    track: (cleanup) => void cleanups.push(cleanup),
  };
}

/** A free loopback port with nothing listening on it (connection refused). */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ConnectProxy {
  url: string;
  /** `host:port` of each CONNECT tunnel asked for. */
  connects: string[];
  /** Absolute-form URLs of plain proxied requests. */
  forwarded: string[];
  close(): Promise<void>;
}

/** An HTTP proxy on loopback: CONNECT tunnels (node:http 'connect') and absolute-form forwarding. */
export async function startConnectProxy(options: { refuse?: boolean } = {}): Promise<ConnectProxy> {
  const connects: string[] = [];
  const forwarded: string[] = [];
  const sockets = new Set<Socket>();
  const server = createHttpServer((req, res) => {
    forwarded.push(req.url ?? '');
    const upstream = httpRequest(req.url ?? '', { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    connects.push(req.url ?? '');
    if (options.refuse === true) {
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const [host, port] = (req.url ?? '').split(':');
    const target = connect(Number(port), host ?? '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      target.write(head);
      target.pipe(client);
      client.pipe(target);
    });
    sockets.add(target);
    target.on('close', () => sockets.delete(target));
    target.on('error', () => client.destroy());
    client.on('error', () => target.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connects,
    forwarded,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

export interface TestCertificates {
  dir: string;
  /** PEM file of the CA that signed the server certificate. */
  caFile: string;
  /** PEM file of another CA that signed nothing here. */
  otherCaFile: string;
  key: string;
  cert: string;
}

/** A private CA and a leaf for 127.0.0.1 / localhost (subjectAltName), made with openssl. */
export function createTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-tls-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const name of ['ca', 'other-ca']) {
    openssl(
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=fenbs-mcp test ${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
  }
  writeFileSync(
    join(dir, 'leaf.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl('req', ...ecKey, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=127.0.0.1');
  openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'leaf.ext');
  return {
    dir,
    caFile: join(dir, 'ca.pem'),
    otherCaFile: join(dir, 'other-ca.pem'),
    key: readFileSync(join(dir, 'leaf.key'), 'utf8'),
    cert: readFileSync(join(dir, 'leaf.pem'), 'utf8'),
  };
}

export interface ClientCertificates {
  /** A client certificate issued by the test CA, its plain key, and the same key encrypted with `passphrase`. */
  certFile: string;
  keyFile: string;
  encryptedKeyFile: string;
  passphrase: string;
  /** A key that belongs to no certificate here. */
  otherKeyFile: string;
  /** A client certificate and key issued by the other CA, which the server does not trust. */
  foreignCertFile: string;
  foreignKeyFile: string;
  /** A leaf issued by an intermediate CA, in a file followed by that intermediate; its key; the leaf alone. */
  chainCertFile: string;
  chainKeyFile: string;
  chainLeafOnlyFile: string;
}

/** Client certificates (extendedKeyUsage clientAuth) next to `certificates`, made with openssl. */
export function createClientCertificates(certificates: TestCertificates): ClientCertificates {
  const dir = certificates.dir;
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  writeFileSync(join(dir, 'client.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n');
  for (const [name, ca] of [
    ['client', 'ca'],
    ['foreign', 'other-ca'],
  ] as const) {
    openssl('req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=fenbs-mcp test ${name}`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      'client.ext',
    );
  }
  // A chain: the leaf from an intermediate CA, the file holding both (the server trusts only the root).
  writeFileSync(join(dir, 'intermediate.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n');
  openssl('req', ...ecKey, '-keyout', 'intermediate.key', '-out', 'intermediate.csr', '-subj', '/CN=fenbs-mcp test intermediate');
  openssl(
    'x509',
    '-req',
    '-in',
    'intermediate.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'intermediate.pem',
    '-days',
    '2',
    '-extfile',
    'intermediate.ext',
  );
  openssl('req', ...ecKey, '-keyout', 'chained.key', '-out', 'chained.csr', '-subj', '/CN=fenbs-mcp test chained');
  openssl(
    'x509',
    '-req',
    '-in',
    'chained.csr',
    '-CA',
    'intermediate.pem',
    '-CAkey',
    'intermediate.key',
    '-CAcreateserial',
    '-out',
    'chained-leaf.pem',
    '-days',
    '2',
    '-extfile',
    'client.ext',
  );
  writeFileSync(join(dir, 'chained.pem'), readFileSync(join(dir, 'chained-leaf.pem'), 'utf8') + readFileSync(join(dir, 'intermediate.pem'), 'utf8'));
  const passphrase = 'correct horse battery staple';
  openssl('pkcs8', '-topk8', '-in', 'client.key', '-out', 'client-encrypted.key', '-v2', 'aes-256-cbc', '-passout', `pass:${passphrase}`);
  openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'other.key');
  return {
    certFile: join(dir, 'client.pem'),
    keyFile: join(dir, 'client.key'),
    encryptedKeyFile: join(dir, 'client-encrypted.key'),
    passphrase,
    otherKeyFile: join(dir, 'other.key'),
    foreignCertFile: join(dir, 'foreign.pem'),
    foreignKeyFile: join(dir, 'foreign.key'),
    chainCertFile: join(dir, 'chained.pem'),
    chainKeyFile: join(dir, 'chained.key'),
    chainLeafOnlyFile: join(dir, 'chained-leaf.pem'),
  };
}

/** Resolves when the bridge's stderr matches `pattern` (a log line), or rejects after `timeoutMs`. */
export function waitForStderr(bridge: BridgeProcess, pattern: RegExp, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!pattern.test(bridge.stderr())) return;
      bridge.child.stderr.off('data', check);
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      bridge.child.stderr.off('data', check);
      reject(new Error(`stderr never matched ${String(pattern)}:\n${bridge.stderr()}`));
    }, timeoutMs);
    bridge.child.stderr.on('data', check);
    check();
  });
}

/** Resolves when the bridge has written at least `count` stdout lines, or rejects after `timeoutMs`. */
export function waitForLineCount(bridge: BridgeProcess, count: number, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (bridge.lines.length < count) return;
      bridge.child.stdout.off('data', check);
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      bridge.child.stdout.off('data', check);
      reject(new Error(`only ${bridge.lines.length} of ${count} stdout lines within ${timeoutMs} ms; stderr:\n${bridge.stderr()}`));
    }, timeoutMs);
    bridge.child.stdout.on('data', check);
    check();
  });
}

/**
 * Checks the stdio rules on everything the bridge wrote: each line one JSON-RPC 2.0 object
 * (transports §stdio: nothing else on stdout), and each id in `ids` answered exactly once.
 */
export function stdoutProblems(lines: readonly string[], ids: readonly unknown[]): string[] {
  const problems: string[] = [];
  const answers = new Map<unknown, number>();
  for (const line of lines) {
    let message: any;
    try {
      message = JSON.parse(line);
    } catch {
      problems.push(`not JSON: ${line.slice(0, 120)}`);
      continue;
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message) || message.jsonrpc !== '2.0') {
      problems.push(`not a JSON-RPC 2.0 object: ${line.slice(0, 120)}`);
      continue;
    }
    if (!('method' in message)) answers.set(message.id, (answers.get(message.id) ?? 0) + 1);
  }
  for (const id of ids) {
    if (answers.get(id) !== 1) problems.push(`id ${JSON.stringify(id)} answered ${answers.get(id) ?? 0} times`);
  }
  for (const id of answers.keys()) {
    if (id !== null && !ids.includes(id)) problems.push(`a reply for an id never sent: ${JSON.stringify(id)}`);
  }
  return problems;
}
