// Runs the SDK v1 reference server (sdk-v1-full-server-child.ts) as its own process, restartable on the same port.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const CHILD_SOURCE = fileURLToPath(new URL('./sdk-v1-full-server-child.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** One line of the server's exchange log. */
export interface LogEntry {
  at: number;
  ev: 'listening' | 'request' | 'headers' | 'response' | 'aborted' | 'cut' | 'error';
  http?: 'POST' | 'GET' | 'DELETE';
  session?: string;
  /** JSON-RPC method and id of a POSTed message. */
  rpc?: string;
  id?: string | number;
  headers?: Record<string, string>;
  body?: any;
  status?: number;
  /** On `response`: false when the connection closed before the server finished the reply. */
  finished?: boolean;
  requestId?: string | number;
  port?: number;
}

export interface V1ServerOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** How an unknown session id is answered: the spec's 404 or the SDK examples' 400. */
  expiry?: 404 | 400;
  /** Event store and `retry: 150`: streams carry ids and the `poll` tool cuts its own stream. */
  resumable?: boolean;
}

export interface V1Server {
  readonly url: string;
  readonly port: number;
  /** Every entry so far, in order. */
  readonly log: LogEntry[];
  /** Resolves with the first entry (past or future) matching `predicate`. */
  waitFor(predicate: (entry: LogEntry) => boolean, timeoutMs?: number): Promise<LogEntry>;
  /** Kills this process and starts a fresh one on the same port: every session is forgotten. */
  restart(): Promise<V1Server>;
  close(): Promise<void>;
}

let compiled: string | undefined;

/** The child is TypeScript (typed and linted with the rest); Node 20 runs it once transpiled. */
function childCode(): string {
  compiled ??= ts.transpileModule(readFileSync(CHILD_SOURCE, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  return compiled;
}

export async function startV1Server(options: V1ServerOptions = {}): Promise<V1Server> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ['--input-type=module', '-e', childCode()], {
    cwd: REPO_ROOT, // bare imports resolve from here
    env: {
      PATH: process.env.PATH,
      V1_PORT: String(options.port ?? 0),
      V1_EXPIRY: String(options.expiry ?? 404),
      V1_RESUMABLE: options.resumable === true ? '1' : '0',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const log: LogEntry[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  let buffer = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffer += chunk;
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) log.push(JSON.parse(line) as LogEntry);
    for (const wake of [...waiters]) wake();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit');

  const waitFor = (predicate: (entry: LogEntry) => boolean, timeoutMs = 10_000) =>
    new Promise<LogEntry>((resolve, reject) => {
      const check = () => {
        const found = log.find(predicate);
        if (found === undefined) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no matching server log entry within ${timeoutMs} ms; log:\n${log.map((e) => JSON.stringify(e)).join('\n')}\nstderr:\n${stderr}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });

  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  const listening = await Promise.race([
    waitFor((entry) => entry.ev === 'listening'),
    exited.then(() => Promise.reject(new Error(`the v1 server exited before listening:\n${stderr}`))),
  ]);
  const port = listening.port!;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    log,
    waitFor,
    close,
    restart: async () => {
      await close();
      return startV1Server({ ...options, port });
    },
  };
}

/** The exchange log entries of one kind: `requests(server, 'POST', 'tools/call')`. */
export function requestsOf(server: V1Server, http: LogEntry['http'], rpc?: string): LogEntry[] {
  return server.log.filter((entry) => entry.ev === 'request' && entry.http === http && (rpc === undefined || entry.rpc === rpc));
}
