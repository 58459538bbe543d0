// The pipeline in-process: runBridge over PassThrough streams against real loopback servers.

import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemoServer } from '../../../src/demo/demo-server.js';
import { NOT_INITIALIZED_HINT } from '../../../src/http/status-errors.js';
import { startMcpServer } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializedNotification, initializeRequest } from '../../helpers/spawn-bridge.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An in-process bridge to a fresh demo board, both stopped after the test. */
async function bridgeToDemo(): Promise<InProcessBridge> {
  const token = randomUUID();
  const demo = await startDemoServer({ token });
  cleanups.push(() => demo.close());
  const bridge = startInProcessBridge(['--url', demo.url.href], { FENBS_TOKEN: token });
  cleanups.push(() => bridge.kill());
  return bridge;
}

describe('runBridge in-process', () => {
  it('runs a 2025-06-18 session against the demo board and ends when stdin ends', async () => {
    const bridge = await bridgeToDemo();
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result.protocolVersion).toBe('2025-06-18');
    bridge.send(initializedNotification);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const list = await bridge.reply(2);
    expect(list.result.tools.map((tool: { name: string }) => tool.name)).toContain('tasks_get');
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
  });
  it('answers a stdin line that is not UTF-8 with -32700 under its intact id, posts nothing, and answers the next request', async () => {
    const bridge = await bridgeToDemo();
    bridge.sendRaw(
      Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"bad","method":"initialize","params":{"x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}\n')]),
    );
    const rejected = await bridge.waitFor((m) => m.error?.code === -32700);
    // The broken bytes are in params only: the client waiting for "bad" hears back under that id.
    expect(rejected).toMatchObject({ id: 'bad', error: { data: { bridgeCode: 'PARSE_ERROR' } } });
    expect(rejected.error.message).toMatch(/UTF-8/);
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result.protocolVersion).toBe('2025-06-18');
    bridge.end();
    await bridge.exited;
    expect(bridge.lines).toHaveLength(2);
  });
  it('tells a client whose first request is not initialize to send initialize first', async () => {
    const bridge = await bridgeToDemo();
    bridge.send({ jsonrpc: '2.0', id: 'early', method: 'tools/list' });
    const reply = await bridge.reply('early');
    expect(reply.error).toMatchObject({ code: -31001, data: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 400, hint: NOT_INITIALIZED_HINT } });
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result).toBeDefined();
    bridge.send({ jsonrpc: '2.0', id: 'late', method: 'tools/list' });
    expect((await bridge.reply('late')).result.tools.length).toBeGreaterThan(0);
  });

  it('answers server/discover refused by a 2025 server with -32601, so the client falls back at once, and logs no warning', async () => {
    const bridge = await bridgeToDemo();
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    bridge.send({ jsonrpc: '2.0', id: 'probe', method: 'server/discover', params: { _meta: meta } });
    const reply = await bridge.reply('probe');
    expect(reply.error).toMatchObject({ code: -32601, data: { bridgeCode: 'METHOD_NOT_FOUND', status: 400 } });
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result).toBeDefined();
    bridge.end();
    await bridge.exited;
    expect(bridge.stderr()).not.toMatch(/"level":(40|50)/);
  });
  it('keeps the meaning of an error status whose body uses an encoding it cannot decode (a 401 stays REMOTE_AUTH)', async () => {
    const server = await startMcpServer({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/call') return false;
        res.writeHead(401, { 'content-type': 'text/plain', 'content-encoding': 'zstd', 'www-authenticate': 'Bearer realm="t"' });
        res.end(Buffer.alloc(128 * 1024, 7));
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url.href], { FENBS_TOKEN: randomUUID() });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    await bridge.reply('init');
    bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'x', arguments: {} } });
    expect((await bridge.reply('call')).error).toMatchObject({
      code: -31002,
      data: { bridgeCode: 'REMOTE_AUTH', status: 401, wwwAuthenticate: 'Bearer realm="t"' },
    });
    bridge.send({ jsonrpc: '2.0', id: 'next', method: 'ping' });
    expect((await bridge.reply('next')).result).toBeDefined();
  });
});
