// The demo MCP server that `fenbs-mcp --demo` runs in-process: a task board over Streamable HTTP 2025-06-18.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A running demo server. */
export interface DemoServer {
  /** The MCP endpoint, for example `http://127.0.0.1:53412/mcp`. */
  url: URL;
  /** Stops listening and drops every open connection, event streams included. */
  close(): Promise<void>;
}

/** Where to listen and, optionally, the bearer token every request must carry. */
export interface DemoServerOptions {
  host?: string;
  port?: number;
  token?: string;
}

const ENDPOINT_PATH = '/mcp';
const DEFAULT_PROTOCOL_VERSION = '2025-06-18';
const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26'];
/** Bodies above this are refused with 413; the demo's own messages are a few hundred bytes. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Pause between two imported tasks, so progress notifications are visibly spread out. */
export const IMPORT_STEP_MS = 50;
const LOG_LEVELS: readonly string[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const LOOPBACK_HOSTNAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];
const SSE_HEADERS = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' };

type JsonObject = Record<string, unknown>;
type RpcId = string | number;
type Incoming = { kind: 'request'; id: RpcId; method: string; params: JsonObject } | { kind: 'notification'; method: string } | { kind: 'response' };
type TaskStatus = 'open' | 'done';
type Task = { ref: string; title: string; status: TaskStatus; assignee?: string };
interface Session {
  protocolVersion: string;
  tasks: Task[];
  nextNumber: number;
}

/** A JSON-RPC error for a request whose id is known; thrown by handlers, answered by `answerRequest`. */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const STATUS_SCHEMA = { type: 'string', enum: ['open', 'done'] };
const TASK_SCHEMA = {
  type: 'object',
  properties: { ref: { type: 'string' }, title: { type: 'string' }, status: STATUS_SCHEMA, assignee: { type: 'string' } },
  required: ['ref', 'title', 'status'],
};
const TOOLS = [
  {
    name: 'tasks_list',
    title: 'List tasks',
    description: 'Lists the tasks on the board, optionally only the open or only the done ones.',
    inputSchema: { type: 'object', properties: { status: { ...STATUS_SCHEMA, description: 'Only tasks with this status.' } } },
    outputSchema: { type: 'object', properties: { tasks: { type: 'array', items: TASK_SCHEMA } }, required: ['tasks'] },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'tasks_get',
    title: 'Get a task',
    description: 'Shows one task by its reference.',
    inputSchema: { type: 'object', properties: { ref: { type: 'string', description: 'A reference such as "T-1".' } }, required: ['ref'] },
    outputSchema: TASK_SCHEMA,
    annotations: { readOnlyHint: true },
  },
  {
    name: 'tasks_create',
    title: 'Create a task',
    description: 'Adds an open task to the board.',
    inputSchema: { type: 'object', properties: { title: { type: 'string', minLength: 1 }, assignee: { type: 'string' } }, required: ['title'] },
    outputSchema: TASK_SCHEMA,
  },
  {
    name: 'tasks_import',
    title: 'Import tasks',
    description: 'Imports sample tasks slowly, reporting progress when the call carries a progress token.',
    inputSchema: { type: 'object', properties: { count: { type: 'integer', minimum: 1, maximum: 50, default: 5 } } },
    outputSchema: { type: 'object', properties: { imported: { type: 'array', items: { type: 'string' } } }, required: ['imported'] },
  },
];
/** resources/list pages hold this many resources, so a client sees `nextCursor` at work. */
export const RESOURCES_PAGE_SIZE = 2;
const RESOURCES = [
  { uri: 'demo://board', name: 'board', title: 'The task board', description: 'Every task on the board, one per line.', mimeType: 'text/plain' },
  { uri: 'demo://board/open', name: 'open-tasks', title: 'Open tasks', description: 'Only the tasks still open.', mimeType: 'text/plain' },
  { uri: 'demo://board.json', name: 'board-json', title: 'The task board as JSON', description: 'The board as a JSON document.', mimeType: 'application/json' },
];
const PROMPTS = [
  { name: 'summarize_board', title: 'Summarize the board', description: 'Asks for a short summary of the task board.' },
  {
    name: 'plan_task',
    title: 'Plan a task',
    description: 'Asks for a step-by-step plan for one task.',
    arguments: [
      { name: 'ref', description: 'A reference such as "T-1".', required: true },
      { name: 'style', description: 'brief or detailed (default brief).', required: false },
    ],
  },
];

/** Starts the demo server on `127.0.0.1`, port 0 (any free port) unless told otherwise. */
export async function startDemoServer(options: DemoServerOptions = {}): Promise<DemoServer> {
  const { host = '127.0.0.1', port = 0, token } = options;
  if (token === '') throw new TypeError('the demo token must not be empty');
  const sessions = new Map<string, Session>();
  const server = createServer((req, res) => {
    handleRequest(req, res, sessions, token).catch(() => {
      // The demo has no logger; a failure costs this one exchange, never the server.
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, rpcError(null, -32603, 'Internal error'));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: boundPort } = server.address() as AddressInfo;
  const url = new URL(`http://${host.includes(':') ? `[${host}]` : host}:${boundPort}${ENDPOINT_PATH}`);
  let closing: Promise<void> | undefined;
  return {
    url,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // server.close() alone waits for open event streams to finish; drop them now.
        server.closeAllConnections();
        sessions.clear();
      });
      return closing;
    },
  };
}

async function handleRequest(req: IncomingMessage, res: ServerResponse, sessions: Map<string, Session>, token?: string): Promise<void> {
  if (new URL(req.url ?? '/', 'http://demo.invalid').pathname !== ENDPOINT_PATH) {
    return sendJson(res, 404, rpcError(null, -32000, `Not Found: the MCP endpoint is ${ENDPOINT_PATH}`));
  }
  // 2025-06-18 transports §Security: servers MUST validate Origin against DNS rebinding.
  if (!isLoopbackOrigin(req.headers.origin)) {
    return sendJson(res, 403, rpcError(null, -32000, 'Forbidden: Origin not allowed'));
  }
  if (token !== undefined) {
    const presented = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1];
    if (presented === undefined || !sameSecret(presented, token)) {
      // RFC 6750 §3.1: no error code when the request carried no credentials at all.
      const challenge = `Bearer realm="fenbs-demo"${req.headers.authorization === undefined ? '' : ', error="invalid_token"'}`;
      return sendJson(res, 401, rpcError(null, -32000, 'Unauthorized'), { 'WWW-Authenticate': challenge });
    }
  }
  if (req.method === 'POST') return handlePost(req, res, sessions);
  if (req.method === 'DELETE') {
    const found = findSession(req, res, sessions);
    if (found) {
      sessions.delete(found.id);
      res.writeHead(200).end();
    }
    return undefined;
  }
  // No GET listen stream in the demo: 2025-06-18 lets a server answer GET with 405.
  return sendJson(res, 405, rpcError(null, -32000, 'Method not allowed.'), { Allow: 'POST, DELETE' });
}

async function handlePost(req: IncomingMessage, res: ServerResponse, sessions: Map<string, Session>): Promise<void> {
  const accepted = (req.headers.accept ?? '').split(',').map(toMediaType);
  if (!accepted.includes('application/json') || !accepted.includes('text/event-stream')) {
    const message = 'Not Acceptable: Client must accept both application/json and text/event-stream';
    return sendJson(res, 406, rpcError(null, -32000, message));
  }
  if (toMediaType(req.headers['content-type'] ?? '') !== 'application/json') {
    return sendJson(res, 415, rpcError(null, -32000, 'Unsupported Media Type: Content-Type must be application/json'));
  }
  const body = await readBody(req);
  if (body === undefined) {
    return sendJson(res, 413, rpcError(null, -32000, `Payload Too Large: the limit is ${MAX_BODY_BYTES} bytes`));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return sendJson(res, 400, rpcError(null, -32700, 'Parse error: Invalid JSON'));
  }
  // 2025-06-18 removed JSON-RPC batching: one message per POST.
  if (Array.isArray(parsed)) return sendJson(res, 400, rpcError(null, -32600, 'Invalid Request: batches are not supported'));
  const message = toIncoming(parsed);
  if (!message) return sendJson(res, 400, rpcError(null, -32600, 'Invalid Request: not a JSON-RPC 2.0 message'));
  if (message.kind === 'request' && message.method === 'initialize') return initialize(res, message.id, message.params, sessions);
  const found = findSession(req, res, sessions);
  if (!found) return undefined;
  // Notifications and responses to our (never sent) requests are accepted with 202 and no body.
  if (message.kind !== 'request') {
    res.writeHead(202).end();
    return undefined;
  }
  try {
    return answerRequest(res, message.id, message.method, message.params, found.session);
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    return sendJson(res, 200, rpcError(message.id, error.code, error.message));
  }
}

function initialize(res: ServerResponse, id: RpcId, params: JsonObject, sessions: Map<string, Session>): void {
  const requested = params.protocolVersion;
  // Version negotiation (2025-06-18 lifecycle): echo a version we speak, else offer our own.
  const protocolVersion = typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : DEFAULT_PROTOCOL_VERSION;
  const sessionId = randomUUID();
  sessions.set(sessionId, { protocolVersion, tasks: createSeedBoard(), nextNumber: 4 });
  const result = {
    protocolVersion,
    capabilities: { tools: { listChanged: false }, resources: {}, prompts: {}, logging: {} },
    serverInfo: { name: 'fenbs-demo', version: '1.0.0' },
    instructions: 'A demo task board: list, read, create and import tasks to watch fenbs-mcp bridge stdio to HTTP.',
  };
  sendJson(res, 200, rpcResult(id, result), { 'Mcp-Session-Id': sessionId });
}

/** Answers 400/404 itself and returns undefined when the request has no live session. */
function findSession(req: IncomingMessage, res: ServerResponse, sessions: Map<string, Session>) {
  const id = req.headers['mcp-session-id'];
  if (typeof id !== 'string' || id === '') {
    return sendJson(res, 400, rpcError(null, -32000, 'Bad Request: Mcp-Session-Id header is required'));
  }
  const session = sessions.get(id);
  if (!session) return sendJson(res, 404, rpcError(null, -32001, 'Session not found'));
  const version = req.headers['mcp-protocol-version']?.toString();
  // A missing header is allowed: 2025-06-18 says to assume 2025-03-26 then.
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    const supported = SUPPORTED_PROTOCOL_VERSIONS.join(', ');
    return sendJson(res, 400, rpcError(null, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${supported})`));
  }
  return { id, session };
}

function answerRequest(res: ServerResponse, id: RpcId, method: string, params: JsonObject, session: Session): void {
  switch (method) {
    case 'ping':
      return sendJson(res, 200, rpcResult(id, {}));
    case 'logging/setLevel':
      // Accepted so the advertised logging capability works; the demo has nothing to log.
      if (typeof params.level !== 'string' || !LOG_LEVELS.includes(params.level)) throw new RpcError(-32602, 'Invalid params: unknown log level');
      return sendJson(res, 200, rpcResult(id, {}));
    case 'tools/list':
      return sendJson(res, 200, rpcResult(id, { tools: TOOLS }));
    case 'tools/call':
      return callTool(res, id, params, session);
    case 'resources/list':
      return sendJson(res, 200, rpcResult(id, listResources(params)));
    case 'resources/read':
      return sendJson(res, 200, rpcResult(id, readResource(params, session)));
    case 'prompts/list':
      return sendJson(res, 200, rpcResult(id, { prompts: PROMPTS }));
    case 'prompts/get':
      return sendJson(res, 200, rpcResult(id, getPrompt(params, session)));
    default:
      throw new RpcError(-32601, `Method not found: ${method}`);
  }
}

function callTool(res: ServerResponse, id: RpcId, params: JsonObject, session: Session): void {
  const { name, arguments: args = {} } = params;
  if (typeof name !== 'string' || !TOOLS.some((tool) => tool.name === name)) {
    throw new RpcError(-32602, `Unknown tool: ${JSON.stringify(name)}`);
  }
  if (!isObject(args)) throw new RpcError(-32602, 'Invalid params: arguments must be an object');
  try {
    switch (name) {
      case 'tasks_list': {
        const status = readEnum(args, 'status');
        const tasks = session.tasks.filter((task) => status === undefined || task.status === status);
        const text = tasks.length === 0 ? 'No tasks.' : tasks.map(describeTask).join('\n');
        // Answered as a one-event stream so the demo shows both reply modes.
        res.writeHead(200, SSE_HEADERS);
        writeEvent(res, rpcResult(id, toolResult(text, { tasks })));
        return void res.end();
      }
      case 'tasks_get': {
        const ref = readString(args, 'ref', true);
        const task = session.tasks.find((candidate) => candidate.ref === ref);
        if (!task) return sendJson(res, 200, rpcResult(id, { ...toolResult(`No task ${ref} on the board.`), isError: true }));
        return sendJson(res, 200, rpcResult(id, toolResult(describeTask(task), task)));
      }
      case 'tasks_create': {
        const title = readString(args, 'title', true);
        const assignee = readString(args, 'assignee', false);
        const task = addTask(session, title, assignee);
        return sendJson(res, 200, rpcResult(id, toolResult(`Created ${describeTask(task)}`, task)));
      }
      default: // tasks_import, the one tool left
        return streamImport(res, id, params, session, readCount(args));
    }
  } catch (error) {
    // SEP-1303 (2025-11-25) reports bad arguments as a tool error the model can read; older revisions use -32602.
    if (!(error instanceof RpcError) || session.protocolVersion < '2025-11-25') throw error;
    return sendJson(res, 200, rpcResult(id, { ...toolResult(error.message), isError: true }));
  }
}

/** One page of resources; the cursor is the index of the page's first resource. */
function listResources(params: JsonObject): JsonObject {
  const cursor = params.cursor;
  const start = cursor === undefined ? 0 : Number(cursor);
  if (!Number.isInteger(start) || start < 0 || start >= RESOURCES.length) throw new RpcError(-32602, 'Invalid params: unknown cursor');
  const end = start + RESOURCES_PAGE_SIZE;
  return { resources: RESOURCES.slice(start, end), ...(end < RESOURCES.length ? { nextCursor: String(end) } : {}) };
}

function readResource(params: JsonObject, session: Session): JsonObject {
  const { uri } = params;
  const board = (tasks: Task[]) => (tasks.length === 0 ? 'No tasks.' : tasks.map(describeTask).join('\n'));
  switch (uri) {
    case 'demo://board':
      return { contents: [{ uri, mimeType: 'text/plain', text: board(session.tasks) }] };
    case 'demo://board/open':
      return { contents: [{ uri, mimeType: 'text/plain', text: board(session.tasks.filter((task) => task.status === 'open')) }] };
    case 'demo://board.json':
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ tasks: session.tasks }) }] };
    default:
      // 2025-06-18 server/resources §Error Handling: resource not found is -32002.
      throw new RpcError(-32002, `Resource not found: ${JSON.stringify(uri)}`);
  }
}

function getPrompt(params: JsonObject, session: Session): JsonObject {
  const { name, arguments: args = {} } = params;
  if (!isObject(args)) throw new RpcError(-32602, 'Invalid params: arguments must be an object');
  const user = (text: string) => ({ role: 'user', content: { type: 'text', text } });
  if (name === 'summarize_board') {
    return {
      description: 'A summary of the board',
      messages: [user(`Summarize this task board in two sentences:\n${session.tasks.map(describeTask).join('\n')}`)],
    };
  }
  if (name !== 'plan_task') throw new RpcError(-32602, `Unknown prompt: ${JSON.stringify(name)}`);
  const ref = readString(args, 'ref', true);
  const style = readString(args, 'style', false) ?? 'brief';
  const task = session.tasks.find((candidate) => candidate.ref === ref);
  if (!task) throw new RpcError(-32602, `Invalid params: no task ${ref} on the board`);
  return { description: `A plan for ${ref}`, messages: [user(`Write a ${style} step-by-step plan for this task:\n${describeTask(task)}`)] };
}

/** Imports `count` tasks one step at a time on an event stream, progress first, result last. */
function streamImport(res: ServerResponse, id: RpcId, params: JsonObject, session: Session, count: number): void {
  const meta = params._meta;
  const token = isObject(meta) ? meta.progressToken : undefined;
  const progressToken = typeof token === 'string' || typeof token === 'number' ? token : undefined;
  const imported: string[] = [];
  res.writeHead(200, SSE_HEADERS);
  const timer = setInterval(() => {
    imported.push(addTask(session, `Imported task ${imported.length + 1} of ${count}`).ref);
    if (progressToken !== undefined) {
      const progress = { progressToken, progress: imported.length, total: count, message: `imported ${imported.length} of ${count}` };
      writeEvent(res, { jsonrpc: '2.0', method: 'notifications/progress', params: progress });
    }
    if (imported.length < count) return;
    clearInterval(timer);
    writeEvent(res, rpcResult(id, toolResult(`Imported ${count} tasks: ${imported.join(', ')}.`, { imported })));
    res.end();
  }, IMPORT_STEP_MS);
  // A client that hangs up (or close()) stops the import.
  res.on('close', () => clearInterval(timer));
}

function createSeedBoard(): Task[] {
  return [
    { ref: 'T-1', title: 'Draft the release notes', status: 'open', assignee: 'claude' },
    { ref: 'T-2', title: 'Review the bridge README', status: 'open' },
    { ref: 'T-3', title: 'Ship fenbs-mcp 0.1', status: 'done' },
  ];
}

function addTask(session: Session, title: string, assignee?: string): Task {
  const task: Task = { ref: `T-${session.nextNumber}`, title, status: 'open', ...(assignee === undefined ? {} : { assignee }) };
  session.nextNumber += 1;
  session.tasks.push(task);
  return task;
}

function describeTask(task: Task): string {
  return `${task.ref} [${task.status}] ${task.title}${task.assignee === undefined ? '' : ` (assignee: ${task.assignee})`}`;
}

function readString(args: JsonObject, key: string, required: true): string;
function readString(args: JsonObject, key: string, required: false): string | undefined;
function readString(args: JsonObject, key: string, required: boolean): string | undefined {
  const value = args[key];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '') throw new RpcError(-32602, `Invalid params: ${key} must be a non-empty string`);
  return value;
}

function readEnum(args: JsonObject, key: string): TaskStatus | undefined {
  const value = args[key];
  if (value === undefined || value === 'open' || value === 'done') return value;
  throw new RpcError(-32602, `Invalid params: ${key} must be "open" or "done"`);
}

function readCount(args: JsonObject): number {
  const value = args.count ?? 5;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 50) {
    throw new RpcError(-32602, 'Invalid params: count must be an integer from 1 to 50');
  }
  return value;
}

function toolResult(text: string, structuredContent?: JsonObject): JsonObject {
  const content = [{ type: 'text', text }];
  return structuredContent === undefined ? { content } : { content, structuredContent };
}

function toIncoming(value: unknown): Incoming | undefined {
  if (!isObject(value) || value.jsonrpc !== '2.0') return undefined;
  const { id, method, params = {} } = value;
  const hasId = typeof id === 'string' || typeof id === 'number';
  if (typeof method === 'string') {
    if (!isObject(params)) return undefined;
    if (hasId) return { kind: 'request', id, method, params };
    return id === undefined ? { kind: 'notification', method } : undefined;
  }
  return hasId && ('result' in value || 'error' in value) ? { kind: 'response' } : undefined;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isLoopbackOrigin(origin: string | undefined): boolean {
  if (origin === undefined) return true; // Only browsers send Origin; other clients are not at risk.
  return URL.canParse(origin) && LOOPBACK_HOSTNAMES.includes(new URL(origin).hostname);
}

/** Compares digests so the comparison time says nothing about the token. */
function sameSecret(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}

function toMediaType(value: string): string {
  return (value.split(';')[0] ?? '').trim().toLowerCase();
}

/** Resolves to the body text, or undefined when it exceeds MAX_BODY_BYTES (the rest is drained, not kept). */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size <= MAX_BODY_BYTES ? Buffer.concat(chunks).toString('utf8') : undefined;
}

function rpcResult(id: RpcId, result: JsonObject): JsonObject {
  return { jsonrpc: '2.0', id, result };
}

/** `id: null` where the request's id is unknown, as JSON-RPC 2.0 §5 and the official SDK server do. */
function rpcError(id: RpcId | null, code: number, message: string): JsonObject {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function sendJson(res: ServerResponse, status: number, body: JsonObject, headers: Record<string, string> = {}): undefined {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
  return undefined;
}

function writeEvent(res: ServerResponse, message: JsonObject): void {
  // JSON.stringify never emits a raw newline, so one data line holds the whole message.
  res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}
