// Every response body has one owner: read, drained or destroyed on every path, without crashing, leaking sockets or outgrowing stdout.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  frontLoadedText,
  incompressibleText,
  resultWithText,
  openGzipEventStream,
  sendCorruptGzip,
  sendGzip,
  sendUnknownEncoding,
} from '../helpers/body-fault-servers.js';
import { result, sendJson, sseEvent, startMcpServer, stdoutProblems, type McpServer, type RouteContext } from '../helpers/hardening-servers.js';
import { BIN, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';
import { repetitions } from '../helpers/soak.js';

const call = (id: string, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const okText = (name: string) => ({ content: [{ type: 'text', text: `ok ${name}` }] });
const toolName = ({ message }: RouteContext): string => (typeof message?.params?.name === 'string' ? message.params.name : '');

/** The limit the tests set with --max-message-bytes. */
const MESSAGE_LIMIT_BYTES = 1024 * 1024;
/** How much of an error body the bridge reads at most (reply-reader's ERROR_BODY_MAX_BYTES); the fault body is longer. */
const ERROR_BODY_READ_BYTES = 64 * 1024;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serverWith(route: (context: RouteContext) => boolean | Promise<boolean>): Promise<McpServer> {
  const server = await startMcpServer({ route });
  cleanups.push(() => server.close());
  return server;
}

function bridgeFor(server: McpServer, ...args: string[]): BridgeProcess {
  const bridge = spawnBridge(['--url', server.url.href, ...args]);
  cleanups.push(() => bridge.kill());
  return bridge;
}

/** The three ways the bridge stops reading a compressed body before its end. */
type Abandoned = {
  name: string;
  /** Sends the reply; may return what to wait for before the bridge has let go of the body (the linger). */
  serve: (res: ServerResponse, id: string) => void | Promise<{ released: Promise<void> }>;
  expectReply: (reply: any) => void;
};

const ABANDONED: Abandoned[] = [
  {
    name: 'gzip JSON reply over --max-message-bytes once decoded',
    serve: (res, id) => sendGzip(res, 200, 'application/json', resultWithText(id, frontLoadedText())),
    expectReply: (reply) => expect(reply.error).toMatchObject({ code: -31010, data: { bridgeCode: 'REPLY_TOO_LARGE', status: 200 } }),
  },
  {
    name: 'gzip 500 whose decoded error body is longer than the bridge reads',
    serve: (res) => sendGzip(res, 500, 'text/plain', `upstream failed: ${frontLoadedText(16 * ERROR_BODY_READ_BYTES)}`),
    expectReply: (reply) => expect(reply.error).toMatchObject({ code: -31001, data: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 500 } }),
  },
  {
    name: 'gzip event stream the server keeps open after the response (the linger)',
    serve: async (res, id) => {
      const stream = openGzipEventStream(res);
      await stream.send(sseEvent(result(id, okText('linger'))));
      return { released: stream.closed };
    },
    expectReply: (reply) => expect(reply.result).toEqual(okText('linger')),
  },
];

describe('a compressed body the bridge stops reading', () => {
  it.each(ABANDONED)('answers a $name once, loses no request in flight, serves the next request and exits 0', async ({ serve, expectReply }) => {
    let released: Promise<unknown> = Promise.resolve();
    let inFlight: RouteContext | undefined;
    const server = await serverWith(async (context) => {
      const name = toolName(context);
      if (name === 'fault') {
        released = (await serve(context.res, 'fault'))?.released ?? released;
        return true;
      }
      // Held until the next request arrives: it is in flight while the bridge gives up the fault body.
      if (name === 'in-flight') {
        inFlight = context;
        return true;
      }
      if (name === 'next' && inFlight !== undefined) sendJson(inFlight.res, 200, result(inFlight.message.id, okText('in-flight')));
      return false;
    });
    const bridge = bridgeFor(server, '--max-message-bytes', String(MESSAGE_LIMIT_BYTES));
    bridge.send(call('in-flight', 'in-flight'));
    await server.waitForRequest((r) => r.message?.id === 'in-flight');
    bridge.send(call('fault', 'fault'));
    expectReply(await bridge.reply('fault'));
    await released;
    bridge.send(call('next', 'next'));
    expect((await bridge.reply('next')).result).toEqual(okText('next'));
    expect((await bridge.reply('in-flight')).result).toEqual(okText('in-flight'));
    bridge.end();
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(stdoutProblems(bridge.lines, ['in-flight', 'fault', 'next'])).toEqual([]);
  });
});

/** One way a reply's body fails, keyed by the tool name prefix the server sees. */
const FAILURE_MODES = {
  // Decode errors: RFC 9110 §8.4, an encoding the recipient cannot decode is not forwarded as is.
  zstd: { serve: (res: ServerResponse, id: string) => sendUnknownEncoding(res, id), code: 'REMOTE_BAD_REPLY' },
  corrupt: { serve: (res: ServerResponse, id: string) => sendCorruptGzip(res, id), code: 'REMOTE_BAD_REPLY' },
  // The limit: decoding stops at --max-message-bytes.
  limit: { serve: (res: ServerResponse, id: string) => sendGzip(res, 200, 'application/json', resultWithText(id, frontLoadedText())), code: 'REPLY_TOO_LARGE' },
  // Early close: only the start of a long error body is read.
  'early-close': { serve: (res: ServerResponse) => sendGzip(res, 500, 'text/plain', frontLoadedText(16 * ERROR_BODY_READ_BYTES)), code: 'REMOTE_HTTP_STATUS' },
} as const;
type FailureMode = keyof typeof FAILURE_MODES | 'linger';
const modeOf = (name: string): FailureMode | undefined =>
  (['zstd', 'corrupt', 'limit', 'early-close', 'linger'] as const).find((mode) => name.startsWith(`${mode}-`));

/**
 * A server that fails each tools/call by its name's mode (`zstd-7`, `linger-3`) and answers the rest.
 * Lingering streams are never ended by the server: only the bridge can close them.
 */
function failingServer(lingering: Promise<void>[] = []): Promise<McpServer> {
  return serverWith(async (context) => {
    const name = toolName(context);
    const mode = modeOf(name);
    if (mode === undefined) return false;
    if (mode === 'linger') {
      const stream = openGzipEventStream(context.res);
      lingering.push(stream.closed);
      await stream.send(sseEvent(result(context.message.id, okText(name))));
    } else {
      FAILURE_MODES[mode].serve(context.res, context.message.id);
    }
    return true;
  });
}

/** Requests in flight at once in the failure runs: few connections for a correct bridge, yet 1,000 failures in a few seconds. */
const FAILURE_WINDOW = 4;

/** Sends the ids as tools/calls, FAILURE_WINDOW at a time, each window answered before the next is sent. */
async function inWindows(bridge: BridgeProcess, server: McpServer, ids: readonly string[]): Promise<Map<string, any>> {
  const replies = new Map<string, any>();
  for (let start = 0; start < ids.length; start += FAILURE_WINDOW) {
    const window = ids.slice(start, start + FAILURE_WINDOW);
    for (const id of window) bridge.send(call(id, id));
    for (const id of window) {
      try {
        replies.set(id, await bridge.reply(id, 5_000));
      } catch (error) {
        const why = (error as Error).message.split('\n')[0];
        throw new Error(
          `no reply to ${id}, failure ${ids.indexOf(id) + 1} of ${ids.length}: the server saw ${server.postsFor(id).length} POST of it and has ${server.openConnections} connections open (${why})`,
        );
      }
    }
  }
  return replies;
}

/** A window of good calls at once: the baseline is the idle connections they leave (one per call in flight). */
async function warmUp(bridge: BridgeProcess): Promise<string[]> {
  const ids = Array.from({ length: FAILURE_WINDOW }, (_, i) => `warm-up-${i}`);
  for (const id of ids) bridge.send(call(id, id));
  for (const id of ids) expect((await bridge.reply(id)).result).toEqual(okText(id));
  return ids;
}

// Failures in a row, each more than the bridge's MAX_CONNECTIONS (128): a body left unreleased would
// hold its socket, and the pool would run dry before the loop ends. A soak run repeats each more.
const ENCODING_FAILURES = repetitions(300, 1_000);
const BODY_FAILURES = repetitions(240, 800);
const LINGERING_STREAMS = repetitions(60, 200);

const modeIds = (modes: readonly FailureMode[], count: number): string[] => Array.from({ length: count }, (_, i) => `${modes[i % modes.length]!}-${i}`);

describe('every body released', () => {
  it(`answers ${ENCODING_FAILURES} replies with an unknown or corrupt content encoding, keeps reaching the server and leaves no socket open`, async () => {
    const server = await failingServer();
    const bridge = bridgeFor(server);
    const warmUps = await warmUp(bridge);
    const baseline = server.openConnections;
    const ids = modeIds(['zstd', 'corrupt'], ENCODING_FAILURES);
    const replies = await inWindows(bridge, server, ids);
    for (const id of ids) expect(replies.get(id).error).toMatchObject({ code: -31006, data: { bridgeCode: 'REMOTE_BAD_REPLY', status: 200 } });
    bridge.send(call('next', 'next'));
    expect((await bridge.reply('next')).result).toEqual(okText('next'));
    await server.waitForOpenConnections(baseline, 5_000);
    bridge.end();
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(stdoutProblems(bridge.lines, [...warmUps, ...ids, 'next'])).toEqual([]);
  }, 60_000);

  it(`survives ${BODY_FAILURES + LINGERING_STREAMS} body failures of every kind (decode error, limit, early close, linger), answers each once and returns to its baseline of open sockets`, async () => {
    const streams: Promise<void>[] = [];
    const server = await failingServer(streams);
    const bridge = bridgeFor(server, '--max-message-bytes', String(MESSAGE_LIMIT_BYTES));
    const warmUps = await warmUp(bridge);
    const baseline = server.openConnections;
    // The failures a few at a time, then the streams that stay open after their response, all at once
    // (a few at a time each would wait out the linger).
    const ids = modeIds(['zstd', 'corrupt', 'limit', 'early-close'], BODY_FAILURES);
    const replies = await inWindows(bridge, server, ids);
    const lingering = modeIds(['linger'], LINGERING_STREAMS);
    for (const id of lingering) bridge.send(call(id, id));
    for (const id of lingering) replies.set(id, await bridge.reply(id, 15_000));
    for (const id of ids) {
      const mode = modeOf(id) as keyof typeof FAILURE_MODES;
      expect(replies.get(id).error.data.bridgeCode, id).toBe(FAILURE_MODES[mode].code);
    }
    for (const id of lingering) expect(replies.get(id).result).toEqual(okText(id));
    // The server never ends a lingering stream: the bridge closes each one after its response.
    let closed = 0;
    for (const stream of streams) void stream.then(() => closed++);
    await Promise.race([Promise.all(streams), sleep(10_000)]);
    expect(closed, 'lingering streams the bridge closed').toBe(lingering.length);
    await server.waitForOpenConnections(baseline, 10_000);
    bridge.send(call('next', 'next'));
    expect((await bridge.reply('next')).result).toEqual(okText('next'));
    bridge.end();
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(stdoutProblems(bridge.lines, [...warmUps, ...ids, ...lingering, 'next'])).toEqual([]);
  }, 90_000);

  it('never exits with a request unanswered: at stdin EOF every id has exactly one reply', async () => {
    const server = await failingServer();
    const bridge = bridgeFor(server);
    // More failures than the bridge has connections (MAX_CONNECTIONS, 128), then a good call, then EOF.
    const ids = [...modeIds(['zstd'], 140), 'last'];
    for (const id of ids) bridge.send(call(id, id));
    bridge.end();
    const exit = await Promise.race([bridge.exited, new Promise((resolve) => setTimeout(() => resolve('still running 20 s after stdin EOF'), 20_000))]);
    expect({ exit, problems: stdoutProblems(bridge.lines, ids) }).toEqual({ exit: { code: 0, signal: null }, problems: [] });
  }, 30_000);
});

describe('a client that stops reading stdout', () => {
  /** What the stdout bound (16 MiB waiting for stdout) lets through at 256 KB a reply, plus every connection's reply in transit and a margin. */
  const MAX_POSTS_WHILE_STALLED = 300;
  const MAX_RSS_MB = 200;
  const REPLY_BYTES = 256 * 1024;
  const REQUESTS = 2_000;
  const STALL_MS = 10_000;

  /** VmRSS of a live process in MB, from /proc (Linux). */
  const rssMb = (pid: number): number => {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? 0 : Number(match[1]) / 1024;
  };

  it('keeps RSS under 200 MB and the POSTs within the stdout bound while nobody reads stdout, then answers every request once it is read', async () => {
    const filler = JSON.stringify(incompressibleText(REPLY_BYTES));
    const server = await serverWith((context) => {
      if (context.message?.method !== 'tools/call') return false;
      const text = `{"jsonrpc":"2.0","id":${JSON.stringify(context.message.id)},"result":{"content":[{"type":"text","text":${filler}}]}}`;
      sendJson(context.res, 200, text);
      return true;
    });
    // Spawned without the line collector: stdout is not read at all until the stall is over.
    const child = spawn(process.execPath, [BIN, '--url', server.url.href], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, FENBS_MCP_LOG_LEVEL: 'warn' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.kill('SIGKILL'));
    const exited = once(child, 'exit');
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4_000)));
    child.stdin.on('error', () => undefined);

    // The client keeps writing requests at an even pace for the whole stall, sampling RSS as it goes.
    const ids = Array.from({ length: REQUESTS }, (_, i) => `r-${i}`);
    let sent = 0;
    let maxRss = 0;
    const started = performance.now();
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const due = Math.min(REQUESTS, Math.ceil((REQUESTS * (performance.now() - started)) / STALL_MS));
        for (; sent < due; sent++) child.stdin.write(`${JSON.stringify(call(ids[sent]!, 'big'))}\n`);
        if (child.exitCode === null) maxRss = Math.max(maxRss, rssMb(child.pid!));
        if (performance.now() - started >= STALL_MS || child.exitCode !== null) {
          clearInterval(tick);
          resolve();
        }
      }, 50);
    });
    const postsWhileStalled = server.requests.filter((r) => r.method === 'POST').length;
    expect(child.exitCode, stderr).toBeNull();
    expect(Math.round(maxRss), `peak RSS in MB with stdout unread for ${STALL_MS} ms (the server saw ${postsWhileStalled} POSTs)`).toBeLessThan(MAX_RSS_MB);
    expect(postsWhileStalled, `POSTs the server saw while stdout was unread (peak RSS ${Math.round(maxRss)} MB)`).toBeLessThanOrEqual(MAX_POSTS_WHILE_STALLED);

    // The client reads again: every request is answered exactly once and the bridge ends cleanly.
    const answers = new Map<string, number>();
    let partial = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        const id = /"id":"(r-\d+)"/.exec(line.slice(0, 200))?.[1] ?? `(no id) ${line.slice(0, 80)}`;
        answers.set(id, (answers.get(id) ?? 0) + 1);
      }
    });
    child.stdin.end();
    const [code] = (await exited) as [number | null];
    expect(code, stderr).toBe(0);
    const wrong = [...ids.filter((id) => answers.get(id) !== 1), ...[...answers.keys()].filter((id) => !ids.includes(id))];
    expect(wrong.slice(0, 10), `${wrong.length} ids not answered exactly once`).toEqual([]);
  }, 180_000);
});
