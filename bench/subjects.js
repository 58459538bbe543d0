// The things measured, spoken to the same way: the built bridge, the echo child, the one-way reply
// writer, and undici in-process (run in a child of its own so that its CPU is its own).
import { Pool } from 'undici';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

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
const UNDICI_CHILD_PATH = fileURLToPath(new URL('./undici-child.js', import.meta.url));
const REPLY_WRITER_PATH = fileURLToPath(new URL('./reply-writer.js', import.meta.url));

// How a subject is timed when this process speaks to it: each subject class inherits these, and the
// undici child runs the same code on its in-process pool, so both sides are timed alike.
class TimedSubject {
  // `count` round trips one at a time; the duration of each, µs.
  async timeSequential(count) {
    const samplesMicros = [];
    for (let index = 0; index < count; index += 1) {
      const startedAt = performance.now();
      await this.call(0);
      samplesMicros.push((performance.now() - startedAt) * 1000);
    }
    return samplesMicros;
  }

  // Keeps `inFlight` calls outstanding until `total` have been answered; the time it took, ms.
  async timeInFlight(total, inFlight) {
    const startedAt = performance.now();
    let started = 0;
    const work = async () => {
      while (started < total) {
        started += 1;
        await this.call(0);
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, total) }, work));
    return performance.now() - startedAt;
  }

  // One call whose reply carries `bytes` of text; the time it took, ms, and the reply.
  async timeCall(bytes) {
    const startedAt = performance.now();
    const reply = await this.call(bytes);
    return { elapsedMs: performance.now() - startedAt, reply };
  }

  // `count` requests written at once; the time until every reply was in, ms.
  async timePipelined(count) {
    const startedAt = performance.now();
    await this.callPipelined(count);
    return performance.now() - startedAt;
  }
}

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

// With `askProgress` the call asks for progress (`_meta.progressToken`, as SDK clients do, the id).
function toToolCallMessage(id, bytes, askProgress = false) {
  const args = bytes > 0 ? { bytes } : {};
  const params = askProgress ? { name: 'bench', arguments: args, _meta: { progressToken: id } } : { name: 'bench', arguments: args };
  return { jsonrpc: '2.0', id, method: 'tools/call', params };
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
export class BridgeSubject extends TimedSubject {
  constructor({ bridgePath, url, nodePath = process.execPath, askProgress = false, name = 'fenbs-mcp' }) {
    super();
    this.name = name;
    this.nextId = 1;
    this.askProgress = askProgress;
    this.child = new LineChild({
      name,
      command: nodePath,
      args: [bridgePath, '--url', url, '--log-level', 'warn'],
      env: { ...process.env, FENBS_TOKEN: BENCH_TOKEN },
    });
    this.pid = this.child.pid;
  }

  async initialize() {
    const reply = await this.child.request(0, `${JSON.stringify(toInitializeMessage(0))}\n`);
    if (reply.message?.result?.protocolVersion === undefined) {
      throw new Error(`${this.name} answered initialize with ${JSON.stringify(reply.message).slice(0, 200)}`);
    }
    this.child.send(`${JSON.stringify(INITIALIZED_NOTIFICATION)}\n`);
    return reply;
  }

  async call(bytes = 0) {
    const id = this.nextId++;
    const reply = await this.child.request(id, `${JSON.stringify(toToolCallMessage(id, bytes, this.askProgress))}\n`);
    checkToolReply(this.name, reply, bytes);
    return reply;
  }

  // Writes `count` requests in one write and waits for every reply.
  async callPipelined(count) {
    const ids = Array.from({ length: count }, () => this.nextId++);
    const text = ids.map((id) => `${JSON.stringify(toToolCallMessage(id, 0, this.askProgress))}\n`).join('');
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

// The stdio hop alone: a child that echoes each request line back as it went in. A bridge reads a
// request line and writes a reply line, so for small messages and for a large request line this is
// the same traffic; large replies are measured against ReplyWriterSubject instead.
export class EchoSubject extends TimedSubject {
  constructor({ nodePath = process.execPath } = {}) {
    super();
    this.name = 'echo child';
    this.nextId = 1;
    this.child = new LineChild({ name: 'echo child', command: nodePath, args: ['-e', ECHO_SOURCE], env: process.env });
    this.pid = this.child.pid;
  }

  initialize() {
    return this.child.request(0, `${JSON.stringify(toInitializeMessage(0))}\n`);
  }

  // A line of the same shape as a tool call, echoed back.
  call(bytes = 0) {
    if (bytes !== 0) return Promise.reject(new Error('the echo child answers small calls only'));
    const id = this.nextId++;
    return this.child.request(id, `${JSON.stringify(toToolCallMessage(id, 0))}\n`);
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

// The stdio hop of a large reply alone: a child that writes a reply line of the asked size to its
// stdout (one way) when a small request line asks for it. The reply is built before the timed call
// (`prepare`), so the figure is the pipe and nothing else.
export class ReplyWriterSubject extends TimedSubject {
  constructor() {
    super();
    this.name = 'one-way reply writer';
    this.nextId = 1;
    this.child = new LineChild({ name: this.name, command: process.execPath, args: [REPLY_WRITER_PATH], env: process.env });
    this.pid = this.child.pid;
  }

  async initialize() {
    const reply = await this.child.request(0, '{"id":0,"bytes":0}\n');
    checkToolReply(this.name, reply, 0);
    return reply;
  }

  // Has the child build its `bytes`-sized reply now, so no timed call pays for it.
  prepare(bytes) {
    const id = this.nextId++;
    return this.child.request(id, `${JSON.stringify({ id, prepare: bytes })}\n`);
  }

  async call(bytes = 0) {
    const id = this.nextId++;
    const reply = await this.child.request(id, `${JSON.stringify({ id, bytes })}\n`);
    checkToolReply(this.name, reply, bytes);
    return reply;
  }

  close() {
    return this.child.close();
  }

  kill() {
    return this.child.kill();
  }
}

// The messages of a text/event-stream body, in order.
function readSseMessages(text) {
  const messages = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((field) => field.startsWith('data:'))
      .map((field) => field.slice(field.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (data !== '') messages.push(JSON.parse(data));
  }
  return messages;
}

// The reply with `id` from an event stream; a tools/call stream must carry its notification
// (`expectedMethod`) first, as the bridge must forward it.
function findSseMessage(text, id, expectedMethod) {
  const messages = readSseMessages(text);
  const index = messages.findIndex((message) => message.id === id && message.method === undefined);
  if (index === -1) throw new Error(`no message with id ${id} in the event stream`);
  if (expectedMethod !== undefined && !messages.slice(0, index).some((message) => message.method === expectedMethod)) {
    throw new Error(`no ${expectedMethod} event before the reply to ${id} in the event stream`);
  }
  return messages[index];
}

// The HTTP hop alone: the same POSTs over an undici keep-alive pool, in the process that imports
// this (bench/undici-child.js runs it in a process of its own; see UndiciChildSubject).
export class UndiciSubject extends TimedSubject {
  constructor({ origin, path, askProgress = false }) {
    super();
    this.name = 'undici in-process';
    this.path = path;
    this.askProgress = askProgress;
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
    const expected =
      message.method === 'tools/call' && this.path === '/sse' ? (this.askProgress ? 'notifications/progress' : 'notifications/message') : undefined;
    return { headers, message: isSse ? findSseMessage(text, message.id, expected) : JSON.parse(text) };
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
    const reply = await this.post(toToolCallMessage(id, bytes, this.askProgress), bytes);
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

// undici in-process, run in a child of its own (bench/undici-child.js) so that its CPU and memory are
// read from /proc exactly as the bridge's are. The child times each phase itself, so the stdio that
// carries the commands is not part of any figure.
export class UndiciChildSubject {
  constructor({ origin, path, askProgress = false }) {
    this.name = 'undici in-process';
    this.nextId = 1;
    this.child = new LineChild({
      name: this.name,
      command: process.execPath,
      args: askProgress ? [UNDICI_CHILD_PATH, origin, path, '--ask-progress'] : [UNDICI_CHILD_PATH, origin, path],
      env: process.env,
    });
    this.pid = this.child.pid;
  }

  // Sends one command and resolves with the child's answer to it.
  async command(op, args = {}) {
    const id = this.nextId++;
    const reply = await this.child.request(id, `${JSON.stringify({ id, op, ...args })}\n`);
    const message = reply.line === undefined ? reply.message : JSON.parse(reply.line.toString('utf8'));
    if (message.error !== undefined) throw new Error(`${this.name}: ${message.error}`);
    return message.result;
  }

  initialize() {
    return this.command('initialize');
  }

  timeSequential(count) {
    return this.command('timeSequential', { count });
  }

  timeInFlight(total, inFlight) {
    return this.command('timeInFlight', { total, inFlight });
  }

  async timeCall(bytes) {
    return { elapsedMs: await this.command('timeCall', { bytes }), reply: undefined };
  }

  timePipelined(count) {
    return this.command('timePipelined', { count });
  }

  close() {
    return this.child.close();
  }

  kill() {
    return this.child.kill();
  }
}
