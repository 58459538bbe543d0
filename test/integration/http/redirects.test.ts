// Redirects: a 307/308 to the same origin is followed and remembered; every other redirect is refused, and nothing leaves the origin.

import { describe, expect, it } from 'vitest';
import { MAX_REDIRECT_HOPS, sameOriginTarget } from '../../../src/http/redirects.js';
import { runDoctor } from '../../../src/doctor/doctor.js';
import { createConfig } from '../../../src/config/config.js';
import { openSession, serversForFile, type McpServer, type Route } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';

const { serve, track } = serversForFile();
const TOKEN = 'redirect-test-token-0123456789';

describe('sameOriginTarget', () => {
  const here = new URL('http://127.0.0.1:3000/mcp?x=1#frag');

  it.each([307, 308])('follows a %i to the same scheme, host and port, relative or absolute, without the fragment', (status) => {
    expect(sameOriginTarget(here, status, '/mcp/')?.href).toBe('http://127.0.0.1:3000/mcp/');
    expect(sameOriginTarget(here, status, 'http://127.0.0.1:3000/v2/mcp?y=2#top')?.href).toBe('http://127.0.0.1:3000/v2/mcp?y=2');
    expect(sameOriginTarget(new URL('https://mcp.example.com/mcp'), status, 'https://MCP.example.com:443/mcp/')?.href).toBe('https://mcp.example.com/mcp/');
  });

  it.each([301, 302, 303, 300, 304, 200])('refuses a %i even to the same origin', (status) => {
    expect(sameOriginTarget(here, status, '/mcp/')).toBeUndefined();
  });

  it.each([
    ['another port', 'http://127.0.0.1:3001/mcp'],
    ['another scheme', 'https://127.0.0.1:3000/mcp'],
    ['another host', 'http://localhost:3000/mcp'],
    ['a scheme-relative other host', '//evil.example/mcp'],
    ['user info', 'http://user:pass@127.0.0.1:3000/mcp'],
    ['not a URL at all', 'http://[::1'],
    ['a non-HTTP scheme', 'javascript:alert(1)'],
  ])('refuses a 307 to %s', (_what, location) => {
    expect(sameOriginTarget(here, 307, location)).toBeUndefined();
  });

  it('refuses a 307 without a Location', () => {
    expect(sameOriginTarget(here, 307, undefined)).toBeUndefined();
  });
});

/** Paths the server saw, in order, with the body and headers of each. */
interface Seen {
  path: string;
  method: string;
  body: string;
  authorization: string | undefined;
  session: string | undefined;
}

/** A server answering MCP on /mcp/ whose /mcp redirects there, as web frameworks do for the trailing slash. */
async function trailingSlashServer(status: number, sessions = true): Promise<{ server: McpServer; seen: Seen[] }> {
  const seen: Seen[] = [];
  const route: Route = ({ req, res, record }) => {
    seen.push({
      path: req.url ?? '',
      method: req.method ?? '',
      body: record.body,
      authorization: req.headers.authorization,
      session: req.headers['mcp-session-id'] as string | undefined,
    });
    if (req.url !== '/mcp') return false;
    res.writeHead(status, { location: '/mcp/', 'content-type': 'text/plain' }).end('Moved to /mcp/');
    return true;
  };
  return { server: await serve({ sessions, route }), seen };
}

function bridgeTo(url: URL | string, args: string[] = []): InProcessBridge {
  const bridge = startInProcessBridge(['--url', String(url), ...args], { FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: 'info' });
  track(() => bridge.kill());
  return bridge;
}

describe('a framework-style trailing-slash redirect', () => {
  it.each([307, 308])('is followed on %i with the same body, and later requests go straight to the new URL', async (status) => {
    const { server, seen } = await trailingSlashServer(status);
    const bridge = bridgeTo(server.url);
    await openSession(bridge, server);
    bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: {} } });
    expect((await bridge.reply('call')).result.content[0].text).toBe('ok echo');
    bridge.end();
    await bridge.exited;

    // initialize went to /mcp once, then to /mcp/ with the same method, body and token.
    expect(seen[0]).toMatchObject({ path: '/mcp', method: 'POST', authorization: `Bearer ${TOKEN}` });
    expect(seen[1]).toMatchObject({ path: '/mcp/', method: 'POST', body: seen[0]!.body, authorization: `Bearer ${TOKEN}` });
    // Everything after it (initialized, the call, the session's DELETE at the end) went to /mcp/ only.
    expect(seen.slice(1).map((s) => s.path)).toEqual(seen.slice(1).map(() => '/mcp/'));
    expect(seen.map((s) => s.method)).toContain('DELETE');
    expect(seen.filter((s) => s.path === '/mcp')).toHaveLength(1);
    const session = seen.find((s) => s.session !== undefined)?.session;
    expect(session).toBeDefined();
    // One info line says where the endpoint moved.
    const moves = bridge
      .stderr()
      .split('\n')
      .filter((line) => line.includes('moved the endpoint'));
    expect(moves).toHaveLength(1);
    expect(JSON.parse(moves[0]!)).toMatchObject({ level: 30, from: server.url.href, to: `${server.url.href}/`, status });
  });

  it('is followed for requests already in flight when the endpoint moved, with one info line for all of them', async () => {
    const { server, seen } = await trailingSlashServer(308, false);
    const bridge = bridgeTo(server.url);
    // 2026-07-28 requests carry no session: several can go at once from the start.
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
    };
    for (const id of [1, 2, 3]) bridge.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `t${id}`, arguments: {}, _meta: meta } });
    for (const id of [1, 2, 3]) expect((await bridge.reply(id)).result.content[0].text).toBe(`ok t${id}`);
    expect(seen.filter((s) => s.path === '/mcp/')).toHaveLength(3);
    expect(
      bridge
        .stderr()
        .split('\n')
        .filter((line) => line.includes('moved the endpoint')),
    ).toHaveLength(1);
  });
});

describe('redirects the bridge refuses', () => {
  it('refuses a 307 to another port, and the other server never hears of the token', async () => {
    const other = await serve();
    const server = await serve({ route: ({ res }) => (res.writeHead(307, { location: `http://127.0.0.1:${other.port}/mcp` }).end(), true) });
    const bridge = bridgeTo(server.url);
    bridge.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const reply = await bridge.reply('init');
    expect(reply.error).toMatchObject({ code: -31011, data: { bridgeCode: 'REDIRECT_REFUSED', status: 307, location: `http://127.0.0.1:${other.port}/mcp` } });
    expect(reply.error.message).toMatch(/follows only a 307 or 308 to the same origin/);
    expect(reply.error.data.hint).toMatch(/never reach another address/);
    expect(server.requests).toHaveLength(1);
    // The other origin recorded no request at all: no token, no session, no cookie.
    expect(other.requests).toEqual([]);
    expect(bridge.stderr()).not.toContain(TOKEN);
  });

  it.each([301, 302, 303])('refuses a %i even to the same origin', async (status) => {
    const server = await serve({ route: ({ req, res }) => (req.url === '/mcp' ? (res.writeHead(status, { location: '/mcp/' }).end(), true) : false) });
    const bridge = bridgeTo(server.url);
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await bridge.reply(1)).error).toMatchObject({ data: { bridgeCode: 'REDIRECT_REFUSED', status, location: `${server.url.href}/` } });
    expect(server.requests).toHaveLength(1);
  });

  it(`ends a redirect loop after ${MAX_REDIRECT_HOPS} hops, and keeps the configured URL`, async () => {
    const server = await serve({ route: ({ req, res }) => (res.writeHead(307, { location: req.url === '/mcp' ? '/mcp/' : '/mcp' }).end(), true) });
    const bridge = bridgeTo(server.url);
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const reply = await bridge.reply(1);
    expect(reply.error).toMatchObject({ code: -31011, data: { bridgeCode: 'REDIRECT_REFUSED', status: 307 } });
    expect(reply.error.message).toMatch(/more than 5 times .*: a redirect loop$/);
    expect(server.requests).toHaveLength(MAX_REDIRECT_HOPS + 1);
    expect(bridge.stderr()).not.toContain('moved the endpoint');
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    await bridge.reply(2);
    expect(server.requests[MAX_REDIRECT_HOPS + 1]).toBeDefined();
  });

  it('refuses a cross-origin redirect met after a same-origin hop, and remembers neither', async () => {
    const other = await serve();
    const server = await serve({
      route: ({ req, res }) => (res.writeHead(307, { location: req.url === '/mcp' ? '/mcp/' : `http://127.0.0.1:${other.port}/mcp` }).end(), true),
    });
    const bridge = bridgeTo(server.url);
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await bridge.reply(1)).error).toMatchObject({ data: { bridgeCode: 'REDIRECT_REFUSED' } });
    expect(other.requests).toEqual([]);
    expect(bridge.stderr()).not.toContain('moved the endpoint');
  });
});

describe('doctor and redirects', () => {
  const config = (url: URL) => createConfig({ options: { url: url.href }, env: { FENBS_TOKEN: TOKEN }, readTextFile: () => '' });

  it('follows a same-origin 308 as the bridge does and says so, with the URL to use instead', async () => {
    const { server } = await trailingSlashServer(308);
    const report = await runDoctor(config(server.url), {});
    const redirect = report.checks.find((check) => check.name === 'redirect');
    expect(redirect).toMatchObject({ ok: true, detail: expect.stringContaining(`--url ${server.url.href}/ saves the extra round trip`) });
  });

  it('refuses a loop, naming it', async () => {
    const server = await serve({ route: ({ res }) => (res.writeHead(308, { location: '/mcp' }).end(), true) });
    const report = await runDoctor(config(server.url), {});
    expect(report.ok).toBe(false);
    expect(report.checks.find((check) => check.name === 'connect')?.detail).toMatch(/a redirect loop/);
  });
});
