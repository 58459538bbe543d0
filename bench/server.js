// A minimal MCP remote for the bench: fixed replies in JSON mode (/json) and SSE mode (/sse: a
// notification, then the result; /sse-bare: the same stream without the notification).
//
// GET /stats tells how many connections subjects open, so the bench can say how each uses the pool.
//
// Runs as its own process so that its CPU and memory are never counted against a subject.
// Prints `{"port":N}` as its only stdout line once it listens on 127.0.0.1; exits on stdin EOF.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';

const PROTOCOL_VERSION = '2025-06-18';
// Room for the bench's 50 MiB request line; the same as fenbs-mcp's default --max-line-bytes.
const MAX_REQUEST_BYTES = 64 * 1024 * 1024;
const KEEP_ALIVE_MS = 120_000;

const sessions = new Set();
let openConnections = 0;
let peakConnections = 0;
let acceptedConnections = 0;
const textCache = new Map();

// The JSON of a tools/call result whose single text item is `bytes` long (cached per size).
function toToolResultJson(bytes) {
  let json = textCache.get(bytes);
  if (json === undefined) {
    const text = bytes > 0 ? 'x'.repeat(bytes) : 'ok';
    json = Buffer.from(JSON.stringify({ content: [{ type: 'text', text }], isError: false }));
    textCache.set(bytes, json);
  }
  return json;
}

// One JSON-RPC response as a list of buffers, so that large results are never copied.
function toResponseParts(id, resultJson) {
  return [Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`), resultJson, Buffer.from('}')];
}

function toErrorBody(id, code, message) {
  return JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });
}

function sendStatus(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

// Writes the reply in the route's mode; in SSE mode a notification goes first.
function sendReply(res, mode, parts, extraHeaders, notification) {
  if (mode === 'json') {
    const length = parts.reduce((sum, part) => sum + part.length, 0);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': length, ...extraHeaders });
    for (const part of parts) res.write(part);
    res.end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...extraHeaders });
  if (notification !== undefined && mode === 'sse') {
    res.write(`event: message\ndata: ${JSON.stringify(notification)}\n\n`);
  }
  res.write('event: message\ndata: ');
  for (const part of parts) res.write(part);
  res.end('\n\n');
}

function handleMessage(req, res, mode, message) {
  const { id, method } = message;
  if (typeof method !== 'string') {
    sendStatus(res, 400, toErrorBody(id, -32600, 'not a request'));
    return;
  }
  if (!/^Bearer .+/.test(req.headers.authorization ?? '')) {
    sendStatus(res, 401, toErrorBody(id, -32001, 'missing bearer token'));
    return;
  }
  if (method === 'initialize') {
    const sessionId = randomUUID();
    sessions.add(sessionId);
    const result = Buffer.from(
      JSON.stringify({
        protocolVersion: PROTOCOL_VERSION,
        capabilities: { tools: {} },
        serverInfo: { name: 'fenbs-bench-server', version: '0.0.0' },
      }),
    );
    sendReply(res, mode, toResponseParts(id, result), { 'mcp-session-id': sessionId });
    return;
  }
  // Streamable HTTP: after initialize the client sends the session id and the protocol version.
  if (!sessions.has(req.headers['mcp-session-id'])) {
    sendStatus(res, 400, toErrorBody(id, -32000, 'missing or unknown Mcp-Session-Id'));
    return;
  }
  if (req.headers['mcp-protocol-version'] !== PROTOCOL_VERSION) {
    sendStatus(res, 400, toErrorBody(id, -32000, 'missing or wrong MCP-Protocol-Version'));
    return;
  }
  if (id === undefined) {
    res.writeHead(202, { 'content-length': 0 });
    res.end();
    return;
  }
  if (method === 'tools/call') {
    const bytes = Number(message.params?.arguments?.bytes ?? 0);
    // Progress only for a call that asked for it (a progressToken); any other call gets a log
    // message on its stream instead, so both kinds of stream carry one notification before the result.
    const progressToken = message.params?._meta?.progressToken;
    const notification =
      progressToken === undefined
        ? { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }
        : { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } };
    sendReply(res, mode, toResponseParts(id, toToolResultJson(bytes)), {}, notification);
    return;
  }
  sendReply(res, mode, toResponseParts(id, Buffer.from('{}')), {});
}

// GET /stats: connections open now, at most since the last look (the look resets it), accepted ever.
function sendStats(res) {
  const body = JSON.stringify({ openConnections, peakConnections, acceptedConnections });
  peakConnections = openConnections;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function handleRequest(req, res) {
  if (req.method === 'GET' && req.url === '/stats') {
    sendStats(res);
    return;
  }
  const mode = req.url === '/json' ? 'json' : req.url === '/sse' ? 'sse' : req.url === '/sse-bare' ? 'sse-bare' : undefined;
  if (mode === undefined || req.method !== 'POST') {
    req.resume();
    sendStatus(res, mode === undefined ? 404 : 405, toErrorBody(null, -32000, 'POST /json or /sse'));
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_REQUEST_BYTES) {
      sendStatus(res, 413, toErrorBody(null, -32000, 'request too large'));
      return;
    }
    let message;
    try {
      message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      sendStatus(res, 400, toErrorBody(null, -32700, 'parse error'));
      return;
    }
    handleMessage(req, res, mode, message);
  });
}

const server = createServer({ requestTimeout: 0 }, handleRequest);
server.keepAliveTimeout = KEEP_ALIVE_MS;
server.on('connection', (socket) => {
  openConnections += 1;
  acceptedConnections += 1;
  peakConnections = Math.max(peakConnections, openConnections);
  socket.on('close', () => {
    openConnections -= 1;
  });
});
server.headersTimeout = KEEP_ALIVE_MS + 1000;
server.maxRequestsPerSocket = 0;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => {
  server.closeAllConnections();
  server.close();
});
