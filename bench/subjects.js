// The things measured, spoken to the same way: the built bridge, the echo child, undici in-process.
import { Pool } from 'undici';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const PROTOCOL_VERSION = '2025-06-18';
const BENCH_TOKEN = 'fenbs-bench-token';
const UNDICI_CONNECTIONS = 64;
const KEEP_ALIVE_MS = 60_000;
// The echo child's whole program: the stdio hop alone, every line back as it went in.
const ECHO_SOURCE = 'process.stdin.pipe(process.stdout)';
// Lines longer than this are not parsed; they answer the one request that is pending.
const MAX_PARSED_LINE_BYTES = 64 * 1024;
const STDERR_TAIL_BYTES = 4096;
const EXIT_TIMEOUT_MS = 10_000;
const NEWLINE = 0x0a;

// A child process spoken to in lines: writes request lines to its stdin, matches reply lines by id.
class LineChild {
  constructor({ name, command, args, env }) {
    this.name = name;
    this.pending = new Map();
    this.partial = [];
    this.partialBytes = 0;
    this.queue = [];
    this.lineCount = 0;
    this.notificationCount = 0;
    this.unmatchedCount = 0;
    this.stderrBytes = 0;
    this.stderrTail = '';
    this.exit = undefined;
    this.child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.pid = this.child.pid;
    this.exited = once(this.child, 'exit').then(([code, signal]) => {
      this.exit = { code, signal };
      this.rejectAll(new Error(`${this.name} exited (code ${code}, signal ${signal})${this.describeStderr()}`));
      return this.exit;
    });
    this.child.on('error', (error) => this.rejectAll(error));
    this.child.stdin.on('error', () => {});
    this.child.stdout.on('data', (chunk) => this.readChunk(chunk));
    this.child.stderr.on('data', (chunk) => {
      this.stderrBytes += chunk.length;
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
  }

  describeStderr() {
    return this.stderrTail === '' ? '' : `; stderr ends: ${this.stderrTail.trim()}`;
  }

  get isAlive() {
    return this.exit === undefined && this.pid !== undefined;
  }

  rejectAll(error) {
    const waiters = [...this.pending.values()];
    this.pending.clear();
    for (const waiter of waiters) waiter.reject(error);
  }

  // Queues chunks (strings or buffers); everything queued in one tick goes out in one write.
  send(...chunks) {
    if (this.queue.length === 0) process.nextTick(() => this.flush());
    this.queue.push(...chunks);
  }

  flush() {
    const chunks = this.queue;
    this.queue = [];
    if (!this.isAlive) return;
    if (chunks.every((chunk) => typeof chunk === 'string')) {
      this.child.stdin.write(chunks.join(''));
      return;
    }
    this.child.stdin.cork();
    for (const chunk of chunks) this.child.stdin.write(chunk);
    this.child.stdin.uncork();
  }

  // Sends a request line and resolves with its reply: `{ message }`, or `{ line }` for a long line.
  request(id, ...chunks) {
    if (!this.isAlive) return Promise.reject(new Error(`${this.name} is not running${this.describeStderr()}`));
    const reply = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
    if (chunks.length > 0) this.send(...chunks);
    return reply;
  }

  readChunk(chunk) {
    let start = 0;
    let newline = chunk.indexOf(NEWLINE, start);
    while (newline !== -1) {
      const piece = chunk.subarray(start, newline);
      if (this.partial.length === 0) {
        this.readLine(piece);
      } else {
        this.partial.push(piece);
        const line = Buffer.concat(this.partial, this.partialBytes + piece.length);
        this.partial = [];
        this.partialBytes = 0;
        this.readLine(line);
      }
      start = newline + 1;
      newline = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) {
      this.partial.push(chunk.subarray(start));
      this.partialBytes += chunk.length - start;
    }
  }

  readLine(line) {
    this.lineCount += 1;
    if (line.length > MAX_PARSED_LINE_BYTES) {
      this.answerOnlyPending({ line });
      return;
    }
    let message;
    try {
      message = JSON.parse(line.toString('utf8'));
    } catch {
      this.unmatchedCount += 1;
      return;
    }
    const waiter = message !== null && 'id' in message ? this.pending.get(message.id) : undefined;
    if (waiter !== undefined) {
      this.pending.delete(message.id);
      waiter.resolve({ message });
    } else if (message !== null && typeof message.method === 'string' && !('id' in message)) {
      this.notificationCount += 1;
    } else {
      this.unmatchedCount += 1;
    }
  }

  answerOnlyPending(reply) {
    if (this.pending.size !== 1) {
      this.unmatchedCount += 1;
      return;
    }
    const [[id, waiter]] = this.pending;
    this.pending.delete(id);
    waiter.resolve(reply);
  }

  // Ends stdin and waits for the exit; kills the child if it does not exit in time.
  async close() {
    if (this.exit !== undefined) return this.exit;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), EXIT_TIMEOUT_MS);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  kill() {
    if (this.isAlive) this.child.kill('SIGKILL');
    return this.exited;
  }
}

const INITIALIZE_PARAMS = {
  protocolVersion: PROTOCOL_VERSION,
  capabilities: {},
  clientInfo: { name: 'fenbs-bench', version: '0.0.0' },
};

function toInitializeMessage(id) {
  return { jsonrpc: '2.0', id, method: 'initialize', params: INITIALIZE_PARAMS };
}

function toToolCallMessage(id, bytes) {
  const args = bytes > 0 ? { bytes } : {};
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bench', arguments: args } };
}

const INITIALIZED_NOTIFICATION = { jsonrpc: '2.0', method: 'notifications/initialized' };

// The JSON of a string of `bytes` 'y's, the one argument of a large request line. Built once per
// figure and shared by the subjects, so that no call pays for it.
export function toBlobJson(bytes) {
  return Buffer.from(JSON.stringify('y'.repeat(bytes)));
}

// A tools/call line with `blobJson` as params.arguments.blob, in chunks so that the blob is not copied.
function toBlobCallChunks(id, blobJson) {
  const head = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"bench","arguments":{"blob":`;
  return [head, blobJson, '}}}\n'];
}

// Throws unless `reply` is a successful JSON-RPC response carrying `bytes` of tool text.
function checkToolReply(subject, reply, bytes) {
  if (reply.line !== undefined) {
    if (reply.line.length < bytes) {
      throw new Error(`${subject} sent a ${reply.line.length}-byte line for a ${bytes}-byte reply`);
    }
    return;
  }
  const { message } = reply;
  if (message.error !== undefined) {
    throw new Error(`${subject} answered with an error: ${JSON.stringify(message.error)}`);
  }
  const text = message.result?.content?.[0]?.text;
  if (typeof text !== 'string' || text.length !== (bytes > 0 ? bytes : 'ok'.length)) {
    throw new Error(`${subject} answered with an unexpected message: ${JSON.stringify(message).slice(0, 200)}`);
  }
}

// Parses a long bridge line once, to check that a large reply arrived whole.
export function checkLargeLine(subject, reply, bytes) {
  if (reply.line === undefined) return checkToolReply(subject, reply, bytes);
  let message;
  try {
    message = JSON.parse(reply.line.toString('utf8'));
  } catch (error) {
    throw new Error(`${subject} sent a large line that is not JSON`, { cause: error });
  }
  return checkToolReply(subject, { message }, bytes);
}

// The built bridge, or any stdio bridge that takes the same command line.
export class BridgeSubject {
  constructor({ bridgePath, url }) {
    this.name = 'fenbs-mcp';
    this.nextId = 1;
    this.child = new LineChild({
      name: 'fenbs-mcp',
      command: process.execPath,
      args: [bridgePath, '--url', url, '--log-level', 'warn'],
      env: { ...process.env, FENBS_TOKEN: BENCH_TOKEN },
    });
    this.pid = this.child.pid;
  }

  async initialize() {
    const reply = await this.child.request(0, `${JSON.stringify(toInitializeMessage(0))}\n`);
    if (reply.message?.result?.protocolVersion === undefined) {
      throw new Error(`fenbs-mcp answered initialize with ${JSON.stringify(reply.message).slice(0, 200)}`);
    }
    this.child.send(`${JSON.stringify(INITIALIZED_NOTIFICATION)}\n`);
    return reply;
  }

  async call(bytes = 0) {
    const id = this.nextId++;
    const reply = await this.child.request(id, `${JSON.stringify(toToolCallMessage(id, bytes))}\n`);
    checkToolReply(this.name, reply, bytes);
    return reply;
  }

  // Writes `count` requests in one write and waits for every reply.
  async callPipelined(count) {
    const ids = Array.from({ length: count }, () => this.nextId++);
    const text = ids.map((id) => `${JSON.stringify(toToolCallMessage(id, 0))}\n`).join('');
    const replies = ids.map((id) => this.child.request(id));
    this.child.send(text);
    for (const reply of await Promise.all(replies)) checkToolReply(this.name, reply, 0);
  }

  // A tools/call whose line carries `blobJson` (see toBlobJson); the remote answers it with a small result.
  async callWithBlob(blobJson) {
    const id = this.nextId++;
    const reply = await this.child.request(id, ...toBlobCallChunks(id, blobJson));
    checkToolReply(this.name, reply, 0);
    return reply;
  }

  close() {
    return this.child.close();
  }

  kill() {
    return this.child.kill();
  }
}

// The stdio hop alone: a child that echoes each request line back, padded to the reply size. For a
// large reply the padded line crosses the pipes both ways while the bridge's reply crosses once, so
// this part of the limit is generous to the bridge there.
export class EchoSubject {
  constructor() {
    this.name = 'echo child';
    this.nextId = 1;
    this.padCache = new Map();
    this.child = new LineChild({ name: 'echo child', command: process.execPath, args: ['-e', ECHO_SOURCE], env: process.env });
    this.pid = this.child.pid;
  }

  initialize() {
    return this.child.request(0, `${JSON.stringify(toInitializeMessage(0))}\n`);
  }

  // Builds the padding for `bytes`-sized lines ahead of time, so no call pays for it.
  prepare(bytes) {
    if (!this.padCache.has(bytes)) this.padCache.set(bytes, Buffer.from(JSON.stringify('x'.repeat(bytes))));
  }

  // A line of the same shape as a tool call; with `bytes` it carries that much padding.
  async call(bytes = 0) {
    const id = this.nextId++;
    if (bytes === 0) {
      return this.child.request(id, `${JSON.stringify(toToolCallMessage(id, 0))}\n`);
    }
    this.prepare(bytes);
    const pad = this.padCache.get(bytes);
    const head = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"bench","arguments":{"pad":`;
    const reply = await this.child.request(id, head, pad, '}}}\n');
    checkToolReply(this.name, reply, bytes);
    return reply;
  }

  async callPipelined(count) {
    const ids = Array.from({ length: count }, () => this.nextId++);
    const text = ids.map((id) => `${JSON.stringify(toToolCallMessage(id, 0))}\n`).join('');
    const replies = ids.map((id) => this.child.request(id));
    this.child.send(text);
    await Promise.all(replies);
  }

  // The bridge's large request line, echoed back whole: the line crosses the pipes both ways.
  async callWithBlob(blobJson) {
    const id = this.nextId++;
    const reply = await this.child.request(id, ...toBlobCallChunks(id, blobJson));
    checkToolReply(this.name, reply, blobJson.length);
    return reply;
  }

  close() {
    return this.child.close();
  }

  kill() {
    return this.child.kill();
  }
}

// Finds the message with `id` among the events of a text/event-stream body.
function findSseMessage(text, id) {
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((field) => field.startsWith('data:'))
      .map((field) => field.slice(field.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (data === '') continue;
    const message = JSON.parse(data);
    if (message.id === id) return message;
  }
  throw new Error(`no message with id ${id} in the event stream`);
}

// The HTTP hop alone: the same POSTs from this process over an undici keep-alive pool.
export class UndiciSubject {
  constructor({ origin, path }) {
    this.name = 'undici in-process';
    this.path = path;
    this.nextId = 1;
    this.pool = new Pool(origin, { connections: UNDICI_CONNECTIONS, keepAliveTimeout: KEEP_ALIVE_MS });
    this.headers = {
      authorization: `Bearer ${BENCH_TOKEN}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    };
  }

  async post(message, bytes) {
    const { statusCode, headers, body } = await this.pool.request({
      method: 'POST',
      path: this.path,
      headers: this.headers,
      body: JSON.stringify(message),
    });
    if (statusCode === 202) {
      await body.dump();
      return { headers };
    }
    if (statusCode !== 200) {
      throw new Error(`undici in-process: remote answered ${statusCode}: ${(await body.text()).slice(0, 200)}`);
    }
    if (bytes > 0) {
      const buffer = await body.arrayBuffer();
      return { headers, line: { length: buffer.byteLength } };
    }
    const text = await body.text();
    const isSse = String(headers['content-type']).startsWith('text/event-stream');
    return { headers, message: isSse ? findSseMessage(text, message.id) : JSON.parse(text) };
  }

  async initialize() {
    const reply = await this.post(toInitializeMessage(0), 0);
    const sessionId = reply.headers['mcp-session-id'];
    if (typeof sessionId === 'string') this.headers['mcp-session-id'] = sessionId;
    this.headers['mcp-protocol-version'] = PROTOCOL_VERSION;
    await this.post(INITIALIZED_NOTIFICATION, 0);
    return reply;
  }

  async call(bytes = 0) {
    const id = this.nextId++;
    const reply = await this.post(toToolCallMessage(id, bytes), bytes);
    checkToolReply(this.name, reply, bytes);
    return reply;
  }

  async callPipelined(count) {
    await Promise.all(Array.from({ length: count }, () => this.call(0)));
  }

  close() {
    return this.pool.close();
  }
}
