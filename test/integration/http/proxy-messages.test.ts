// Proxy failures name the proxy, not the server behind it: unreachable, and asking for credentials.

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, startMcpServer } from '../../helpers/hardening-servers.js';
import { startInProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';
import { proxyFor } from '../../../src/http/dispatcher.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A proxy that wants credentials: 407 to every CONNECT and every forwarded request. */
async function proxyAskingForCredentials(): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(407, { 'proxy-authenticate': 'Basic realm="corp"' }).end());
  server.on('connect', (_req, socket) =>
    socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n'),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('proxyFor', () => {
  const url = new URL('https://mcp.example.com:8443/mcp');
  it.each([
    [{}, undefined],
    [{ HTTPS_PROXY: 'http://p:3128' }, 'http://p:3128'],
    [{ https_proxy: 'http://lower:3128', HTTPS_PROXY: 'http://upper:3128' }, 'http://lower:3128'],
    [{ HTTP_PROXY: 'http://p:3128' }, 'http://p:3128'],
    [{ HTTPS_PROXY: 'http://p:3128', NO_PROXY: '*' }, undefined],
    [{ HTTPS_PROXY: 'http://p:3128', NO_PROXY: 'example.com' }, undefined],
    [{ HTTPS_PROXY: 'http://p:3128', NO_PROXY: '.example.com' }, undefined],
    [{ HTTPS_PROXY: 'http://p:3128', NO_PROXY: 'mcp.example.com:8443' }, undefined],
    [{ HTTPS_PROXY: 'http://p:3128', NO_PROXY: 'mcp.example.com:443' }, 'http://p:3128'],
    [{ HTTPS_PROXY: 'http://p:3128', NO_PROXY: 'other.com, ample.com' }, 'http://p:3128'],
  ] as const)('with %j gives %s, as EnvHttpProxyAgent decides', (env, expected) => {
    expect(proxyFor(url, env)).toBe(expected);
  });
});

describe('a proxy that fails', () => {
  it('says the proxy is unreachable when nothing listens at the proxy address, not the server', async () => {
    const server = await startMcpServer();
    cleanups.push(() => server.close());
    const deadProxy = `http://127.0.0.1:${await freePort()}`;
    const bridge = startInProcessBridge(['--url', server.url.href, '--connect-timeout', '2000'], { HTTP_PROXY: deadProxy });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 15_000);
    expect(reply.error).toMatchObject({ code: -31013, data: { bridgeCode: 'PROXY_FAILED' } });
    expect(reply.error.message).toBe(`the proxy ${deadProxy} is unreachable: nothing is listening there`);
    expect(reply.error.data.hint).toMatch(/HTTPS_PROXY \/ HTTP_PROXY/);
    expect(server.requests).toHaveLength(0);
  });

  it('still blames the server when NO_PROXY sends the request direct', async () => {
    const port = await freePort();
    const bridge = startInProcessBridge(['--url', `http://127.0.0.1:${port}/mcp`], { HTTP_PROXY: 'http://127.0.0.1:9', NO_PROXY: '127.0.0.1' });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 15_000);
    expect(reply.error).toMatchObject({ code: -31003, data: { bridgeCode: 'REMOTE_UNREACHABLE' } });
    expect(reply.error.message).toBe(`nothing is listening at 127.0.0.1:${port}`);
  });

  it('names a proxy whose URL carries credentials by its origin alone, on stdout and in the log', async () => {
    const proxy = await proxyAskingForCredentials();
    const withCredentials = proxy.url.replace('//', '//proxy-user:proxy-p%40ss-9876@');
    const bridge = startInProcessBridge(['--url', 'http://127.0.0.1:1/mcp', '--log-level', 'debug'], {
      HTTP_PROXY: withCredentials,
      FENBS_MCP_LOG_LEVEL: 'debug',
    });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 15_000);
    expect(reply.error.message).toBe(`the proxy ${proxy.url} wants credentials (407 Proxy Authentication Required)`);
    const everything = `${bridge.lines.join('\n')}\n${bridge.stderr()}`;
    expect(everything).not.toMatch(/proxy-user|p%40ss|p@ss-9876/);
    expect(everything).not.toContain(Buffer.from('proxy-user:p@ss-9876').toString('base64'));
  });

  it('gives a proxy that asks for credentials (407) its own message and hint', async () => {
    const proxy = await proxyAskingForCredentials();
    const bridge = startInProcessBridge(['--url', 'http://127.0.0.1:1/mcp'], { HTTP_PROXY: proxy.url });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 15_000);
    expect(reply.error).toMatchObject({ code: -31013, data: { bridgeCode: 'PROXY_FAILED' } });
    expect(reply.error.message).toBe(`the proxy ${proxy.url} wants credentials (407 Proxy Authentication Required)`);
    expect(reply.error.data.hint).toMatch(/user:password@/);
  });
});
