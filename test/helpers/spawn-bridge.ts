// Spawns the built bin/fenbs-mcp.js exactly as a desktop client does and talks to it over pipes.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/fenbs-mcp.js', import.meta.url));

/** What a test holds of a running bridge, spawned or in-process. */
export interface BridgeHandle {
  /** Writes one line (an object is JSON-serialised) to the bridge's stdin. */
  send(message: unknown): void;
  /** Writes raw text/bytes to stdin as is. */
  sendRaw(data: string | Buffer): void;
  /** Closes stdin (EOF), as a pipeline does after its last line. */
  end(): void;
  /** Every stdout line so far (raw text, newline removed). */
  readonly lines: string[];
  /** Everything written to stderr (the log) so far. */
  stderr(): string;
  /** Resolves with the next stdout line matching `predicate` (parsed JSON), or rejects after `timeoutMs`. */
  waitFor(predicate: (message: any) => boolean, timeoutMs?: number): Promise<any>;
  /** Resolves with the parsed reply whose id is `id`. */
  reply(id: string | number, timeoutMs?: number): Promise<any>;
  /** Stops the bridge if still running. */
  kill(): void;
}

export interface BridgeProcess extends BridgeHandle {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Collects stdout lines and answers waiters; `closed` tells it no more lines will come. */
export interface LineCollector {
  lines: string[];
  waitFor: (predicate: (message: any) => boolean, timeoutMs?: number) => Promise<any>;
  reply: (id: string | number, timeoutMs?: number) => Promise<any>;
  closed: () => void;
}

export function collectLines(stdout: Readable, stderr: () => string): LineCollector {
  const lines: string[] = [];
  let buffer = '';
  const waiters: { predicate: (m: any) => boolean; resolve: (m: any) => void; reject: (e: Error) => void; seen: number }[] = [];
  let closed = false;

  const check = () => {
    for (const waiter of [...waiters]) {
      for (let i = waiter.seen; i < lines.length; i++) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(lines[i]!);
        } catch {
          continue;
        }
        if (waiter.predicate(parsed)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(parsed);
          break;
        }
      }
    }
  };

  stdout.setEncoding('utf8');
  stdout.on('data', (chunk: string) => {
    // Only the new chunk is searched: re-scanning the whole buffer made a 20 MB line cost seconds.
    let newline = chunk.indexOf('\n');
    if (newline === -1) {
      buffer += chunk;
      return;
    }
    let start = 0;
    while (newline !== -1) {
      lines.push(buffer + chunk.slice(start, newline));
      buffer = '';
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
    }
    buffer = chunk.slice(start);
    check();
  });

  const waitFor = (predicate: (message: any) => boolean, timeoutMs = 10_000) =>
    new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.splice(
          waiters.findIndex((w) => w.resolve === done),
          1,
        );
        reject(new Error(`no matching stdout line within ${timeoutMs} ms; stdout:\n${lines.join('\n')}\nstderr:\n${stderr()}`));
      }, timeoutMs);
      const done = (message: any) => {
        clearTimeout(timer);
        resolve(message);
      };
      const fail = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      waiters.push({ predicate, resolve: done, reject: fail, seen: 0 });
      check();
      if (closed && waiters.some((w) => w.resolve === done)) {
        waiters.splice(
          waiters.findIndex((w) => w.resolve === done),
          1,
        );
        fail(new Error(`the bridge has exited and no stdout line matches; stdout:\n${lines.join('\n')}\nstderr:\n${stderr()}`));
      }
    });

  return {
    lines,
    waitFor,
    reply: (id, timeoutMs) => waitFor((m) => m !== null && typeof m === 'object' && m.id === id && !('method' in m), timeoutMs),
    // Once stdout is closed no line can come: a waiter still waiting fails now, with stderr, instead of at its timeout.
    closed: () => {
      closed = true;
      check();
      for (const waiter of waiters.splice(0))
        waiter.reject(new Error(`the bridge exited before a matching stdout line; stdout:\n${lines.join('\n')}\nstderr:\n${stderr()}`));
    },
  };
}

export function spawnBridge(args: string[], env: Record<string, string | undefined> = {}): BridgeProcess {
  return spawnLineProcess(process.execPath, [BIN, ...args], { PATH: process.env.PATH, HOME: process.env.HOME, FENBS_MCP_LOG_LEVEL: 'warn', ...env });
}

/** Any command spoken to in JSON-RPC lines (a bridge started another way: a copied package, a client's config), with exactly `env`. */
export function spawnLineProcess(command: string, args: string[], env: Record<string, string | undefined>): BridgeProcess {
  const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  const collector = collectLines(child.stdout, () => stderr);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  child.stdin.on('error', () => undefined); // the bridge may have exited already
  child.on('close', () => collector.closed());
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));

  return {
    child,
    send: (message) => child.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`),
    sendRaw: (data) => child.stdin.write(data),
    end: () => child.stdin.end(),
    lines: collector.lines,
    stderr: () => stderr,
    waitFor: collector.waitFor,
    reply: collector.reply,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The legacy handshake a 2025-06-18 client starts with. */
export function initializeRequest(id: string | number = 1, protocolVersion = '2025-06-18') {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'fenbs-mcp-tests', version: '1.0.0' } },
  };
}

export const initializedNotification = { jsonrpc: '2.0', method: 'notifications/initialized' };
