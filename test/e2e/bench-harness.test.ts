// The bench's limit children do what the table says they do: one-way replies, and undici reading the whole event stream.
//
// No timing is asserted here (the machines are shared); only that each child speaks its protocol and reads what it must.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const REPLY_WRITER = fileURLToPath(new URL('../../bench/reply-writer.js', import.meta.url));
const UNDICI_CHILD = fileURLToPath(new URL('../../bench/undici-child.js', import.meta.url));
const BENCH_SERVER = fileURLToPath(new URL('../../bench/server.js', import.meta.url));
const LEAST_BRIDGE_BUILD = new URL('../../bench/least-bridge-build.js', import.meta.url).href;
const BYTES_PER_MIB = 1024 * 1024;

/** A child spoken to in lines: each `ask` writes one line and resolves with the next stdout line. */
interface LineChild {
  readonly process: ChildProcessWithoutNullStreams;
  readonly stdinBytes: () => number;
  ask(line: string): Promise<string>;
  next(): Promise<string>;
}

const children: ChildProcessWithoutNullStreams[] = [];
const servers: Server[] = [];

/** A remote that answers every request with an event stream holding the result alone, no progress event. */
async function startStreamWithoutProgress(): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result = { content: [{ type: 'text', text: 'ok' }], isError: false };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`);
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function spawnLineChild(args: string[], env: NodeJS.ProcessEnv = process.env): LineChild {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  children.push(child);
  const lines: Interface = createInterface({ input: child.stdout, crlfDelay: Infinity });
  const iterator = lines[Symbol.asyncIterator]();
  let written = 0;
  const next = async (): Promise<string> => {
    const { value, done } = await iterator.next();
    if (done === true) throw new Error(`${args[0]} ended its stdout`);
    return value;
  };
  return {
    process: child,
    stdinBytes: () => written,
    next,
    ask(line) {
      written += Buffer.byteLength(line) + 1;
      child.stdin.write(`${line}\n`);
      return next();
    },
  };
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
});

describe('bench limit children', () => {
  it('the reply writer answers a small request line with a tool result of the asked size, one way', async () => {
    const writer = spawnLineChild([REPLY_WRITER]);
    expect(JSON.parse(await writer.ask('{"id":1,"prepare":1048576}'))).toEqual({ id: 1 });
    const line = await writer.ask('{"id":2,"bytes":1048576}');
    const message = JSON.parse(line);
    expect(message).toMatchObject({ jsonrpc: '2.0', id: 2, result: { isError: false } });
    expect(message.result.content[0].text).toBe('x'.repeat(BYTES_PER_MIB));
    // The reply's bytes crossed one pipe: what went in was the two small request lines.
    expect(writer.stdinBytes()).toBeLessThan(100);
  });

  // The child throws, and so answers with an error, when a stream lacks its notification before the result.
  it.each([
    { flags: [], what: 'a log message when the call asked for no progress' },
    { flags: ['--ask-progress'], what: 'the progress it asked for' },
  ])('undici in its own process reads $what and then the result of each event-stream call', async ({ flags }) => {
    const server = spawnLineChild([BENCH_SERVER]);
    const { port } = JSON.parse(await server.next());
    const undici = spawnLineChild([UNDICI_CHILD, `http://127.0.0.1:${port}`, '/sse', ...flags]);
    expect(JSON.parse(await undici.ask('{"id":1,"op":"initialize"}'))).toEqual({ id: 1, result: true });
    const sequential = JSON.parse(await undici.ask('{"id":2,"op":"timeSequential","count":3}'));
    expect(sequential).toEqual({ id: 2, result: [expect.any(Number), expect.any(Number), expect.any(Number)] });
    const inFlight = JSON.parse(await undici.ask('{"id":3,"op":"timeInFlight","total":20,"inFlight":4}'));
    expect(inFlight).toEqual({ id: 3, result: expect.any(Number) });
    undici.process.stdin.end();
    server.process.stdin.end();
    const [[undiciCode], [serverCode]] = await Promise.all([once(undici.process, 'exit'), once(server.process, 'exit')]);
    expect({ undiciCode, serverCode }).toEqual({ undiciCode: 0, serverCode: 0 });
  });

  it.each([
    { flags: [], expected: 'no notifications/message event before the reply to 1 in the event stream' },
    { flags: ['--ask-progress'], expected: 'no notifications/progress event before the reply to 1 in the event stream' },
  ])('undici in its own process fails an event-stream call whose stream has only the result ($flags)', async ({ flags, expected }) => {
    const undici = spawnLineChild([UNDICI_CHILD, await startStreamWithoutProgress(), '/sse', ...flags]);
    expect(JSON.parse(await undici.ask('{"id":1,"op":"initialize"}'))).toEqual({ id: 1, result: true });
    const sequential = JSON.parse(await undici.ask('{"id":2,"op":"timeSequential","count":1}'));
    expect(sequential).toEqual({ id: 2, error: expected });
  });

  it('undici in its own process answers a command it does not know with an error, and keeps going', async () => {
    const server = spawnLineChild([BENCH_SERVER]);
    const { port } = JSON.parse(await server.next());
    const undici = spawnLineChild([UNDICI_CHILD, `http://127.0.0.1:${port}`, '/json']);
    expect(JSON.parse(await undici.ask('{"id":1,"op":"reboot"}'))).toEqual({ id: 1, error: 'unknown op "reboot"' });
    expect(JSON.parse(await undici.ask('{"id":2,"op":"initialize"}'))).toEqual({ id: 2, result: true });
  });

  it('the least undici bridge, built as the product is and started by a copy of bin/, answers initialize and keeps the session for the next request', async () => {
    const { buildLeastBridge } = (await import(LEAST_BRIDGE_BUILD)) as { buildLeastBridge: () => Promise<string> };
    const bin = await buildLeastBridge();
    const dist = join(dirname(dirname(bin)), 'dist');
    const server = spawnLineChild([BENCH_SERVER]);
    const { port } = JSON.parse(await server.next());
    const bridge = spawnLineChild([bin, '--url', `http://127.0.0.1:${port}/json`], { ...process.env, FENBS_TOKEN: 'bench' });
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    expect(JSON.parse(await bridge.ask(JSON.stringify(initialize)))).toMatchObject({ id: 1, result: { protocolVersion: '2025-06-18' } });
    // The notification's 202 earns no line; the call after it is answered within the session.
    bridge.process.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bench', arguments: {} } };
    expect(JSON.parse(await bridge.ask(JSON.stringify(call)))).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'ok' }] } });
    bridge.process.stdin.end();
    const [code] = await once(bridge.process, 'exit');
    expect(code).toBe(0);
    // bin/'s loader kept a code cache of this bundle, as it does of the product's.
    expect(existsSync(dist) && readdirSync(dist).some((name) => name.endsWith('.v8cache'))).toBe(true);
    server.process.stdin.end();
  });
});
