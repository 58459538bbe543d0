// In-process: runDoctor's checks against real loopback servers, and formatReport's human form.

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../src/config.js';
import { startDemoServer } from '../src/demo-server.js';
import { formatReport, runDoctor, type DoctorReport } from '../src/doctor.js';
import { createTestCertificates, freePort, result, sendJson, startConnectProxy, startMcpServer, type Route } from './helpers/hardening-servers.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs doctor as the CLI does: options as commander hands them over, and an explicit environment. */
function doctor(options: Record<string, unknown>, env: Record<string, string | undefined> = {}): Promise<DoctorReport> {
  return runDoctor(createConfig({ options, env, readTextFile: () => '' }), env);
}
const names = (report: DoctorReport) => report.checks.map((check) => check.name);
const check = (report: DoctorReport, name: string) => report.checks.find((c) => c.name === name);
/** The hardening server's default answer to tools/list is no tools/list result: this one is. */
const listsNoTools: Route = ({ res, message }) => message?.method === 'tools/list' && (sendJson(res, 200, result(message.id, { tools: [] })), true);
const serve = async (options: Parameters<typeof startMcpServer>[0] = {}) => {
  const route = options.route;
  const server = await startMcpServer({ ...options, route: async (context) => (route !== undefined && (await route(context))) || listsNoTools(context) });
  cleanups.push(() => server.close());
  return server;
};

describe('runDoctor', () => {
  it('passes every check against the demo server: a 2025 session, its 4 tools, and the latency of 5 calls', async () => {
    const demo = await startDemoServer({ token: 'demo-doctor-token' });
    cleanups.push(() => demo.close());
    const report = await doctor({ url: demo.url.href }, { FENBS_TOKEN: 'demo-doctor-token' });
    expect(report).toMatchObject({ ok: true, revision: '2025-06-18', url: demo.url.href });
    expect(names(report)).toEqual(['url', 'tcp', 'token', 'protocol', 'tools', 'latency']);
    expect(check(report, 'token')!.detail).toBe('accepted (from env FENBS_TOKEN)');
    expect(check(report, 'protocol')!.detail).toMatch(/^2025-06-18 \(initialize handshake, with a session\)/);
    expect(check(report, 'tools')!.detail).toBe('4 tools listed');
    expect(check(report, 'latency')!.detail).toMatch(/median [\d.]+ ms over 5 calls/);
    expect(report.checks.every((c) => c.hint === undefined)).toBe(true);
  });

  it('fails the token check on a 401, shows the challenge, names the variable to fix and never the token', async () => {
    const server = await serve({
      route: ({ res }) => {
        sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"' });
        return true;
      },
    });
    const report = await doctor({ url: server.url.href }, { FENBS_TOKEN: 'expired-token-1234' });
    expect(report.ok).toBe(false);
    expect(names(report)).toEqual(['url', 'tcp', 'token']);
    expect(check(report, 'token')).toMatchObject({ ok: false, detail: expect.stringMatching(/^401 with the token from env FENBS_TOKEN; WWW-Authenticate: Bearer resource_metadata=/), hint: expect.stringMatching(/FENBS_TOKEN/) });
    expect(JSON.stringify(report)).not.toContain('expired-token-1234');
  });

  it('says no token is set on a 403 without one, and hints at the missing permission', async () => {
    const server = await serve({ route: ({ res }) => (sendJson(res, 403, { error: 'forbidden' }), true) });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'token')).toMatchObject({ ok: false, detail: '403 and no token is set', hint: expect.stringMatching(/permission or scope/) });
  });

  it('fails the protocol check against a server that is not MCP, with a hint to check --url', async () => {
    const server = await serve({ route: ({ res }) => (res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome</body></html>'), true) });
    const report = await doctor({ url: server.url.href });
    expect(report.ok).toBe(false);
    expect(report.revision).toBeUndefined();
    expect(check(report, 'token')!.detail).toBe('none set, and the server did not ask for one');
    expect(check(report, 'protocol')).toMatchObject({ ok: false, detail: expect.stringMatching(/^neither server\/discover nor initialize worked/), hint: expect.stringMatching(/does not look like an MCP endpoint/) });
    expect(names(report)).not.toContain('tools');
  });

  it('fails the protocol check when initialize is answered with a JSON-RPC error', async () => {
    const server = await serve({ route: ({ res, message }) => (sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32600, message: 'nope' } }), true) });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'protocol')).toMatchObject({ ok: false, detail: expect.stringMatching(/initialize failed/) });
  });

  it('fails the tools check when the server answers the handshake but not tools/list', async () => {
    const server = await serve({ route: ({ res, message }) => message?.method === 'tools/list' && (sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }), true) });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'protocol')!.ok).toBe(true);
    expect(check(report, 'tools')).toMatchObject({ ok: false, detail: expect.stringMatching(/tools\/list failed/), hint: expect.stringMatching(/check its logs/) });
    expect(names(report)).not.toContain('latency');
  });

  it('fails the TCP check where nothing listens, with a hint to check the port, and contacts nothing else', async () => {
    const port = await freePort();
    const report = await doctor({ url: `http://127.0.0.1:${port}/mcp` });
    expect(report.ok).toBe(false);
    expect(names(report)).toEqual(['url', 'tcp']);
    expect(check(report, 'tcp')).toMatchObject({ ok: false, detail: `127.0.0.1:${port}: ECONNREFUSED`, hint: expect.stringMatching(/nothing is listening there/) });
  });

  it('fails the connect check when the server takes the connection but resets the request, with the failure and its hint', async () => {
    const server = await serve();
    // The first connection is doctor's TCP check; the second carries the first request and is reset.
    server.connectionFaults.push(
      (socket) => socket.on('error', () => undefined),
      (socket) => socket.resetAndDestroy(),
    );
    const report = await doctor({ url: server.url.href });
    expect(names(report)).toEqual(['url', 'tcp', 'connect']);
    expect(check(report, 'connect')).toMatchObject({ ok: false, detail: expect.any(String), hint: expect.any(String) });
    expect(report.ok).toBe(false);
  });

  it('resolves a host name first, and fails the DNS check for one that does not resolve', async () => {
    const resolved = await doctor({ url: `http://localhost:${await freePort()}/mcp` });
    expect(check(resolved, 'dns')!.ok).toBe(true);
    const report = await doctor({ url: 'https://nonexistent.invalid/mcp' });
    expect(names(report)).toEqual(['url', 'dns']);
    expect(check(report, 'dns')).toMatchObject({ ok: false, detail: expect.stringMatching(/^nonexistent\.invalid: /), hint: expect.stringMatching(/HTTPS_PROXY/) });
  });

  it('follows pages of tools/list and counts every tool', async () => {
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/list') return false;
        const first = message.params?.cursor === undefined;
        sendJson(res, 200, result(message.id, { tools: first ? [{ name: 'a' }, { name: 'b' }] : [{ name: 'c' }], ...(first ? { nextCursor: 'page-2' } : {}) }));
        return true;
      },
    });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'tools')!.detail).toBe('3 tools listed');
    expect(server.requests.filter((r) => r.message?.params?.cursor === 'page-2')).toHaveLength(1);
  });

  it('recognises a 2026-07-28 server by server/discover and lists its tools with the modern headers, POST only', async () => {
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method === 'server/discover') {
          sendJson(res, 200, result(message.id, { supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'modern-board', version: '2.0.0' } } }));
          return true;
        }
        if (message?.method === 'tools/list') {
          sendJson(res, 200, result(message.id, { tools: [{ name: 'a', inputSchema: { type: 'object' } }] }));
          return true;
        }
        return false;
      },
    });
    const report = await doctor({ url: server.url.href });
    expect(report).toMatchObject({ ok: true, revision: '2026-07-28' });
    expect(check(report, 'protocol')!.detail).toBe('2026-07-28 (server/discover, no handshake); versions 2026-07-28; server modern-board 2.0.0; capabilities tools');
    expect(check(report, 'tools')!.detail).toBe('1 tool listed');
    const lists = server.requests.filter((r) => r.message?.method === 'tools/list');
    expect(lists.length).toBeGreaterThan(0);
    for (const list of lists) expect(list.headers).toMatchObject({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    expect(server.requests.every((r) => r.method === 'POST')).toBe(true);
  });

  it('leaves no probe session behind on a 2025 server: it sends DELETE with the session id', async () => {
    const server = await serve({ sessions: true });
    const report = await doctor({ url: server.url.href });
    expect(report.ok).toBe(true);
    const sessionId = server.requests.find((r) => r.message?.method === 'notifications/initialized')!.headers['mcp-session-id'];
    expect(sessionId).toBeDefined();
    expect(server.requests.filter((r) => r.method === 'DELETE').map((r) => r.headers['mcp-session-id'])).toEqual([sessionId]);
  });

  it('fails the TLS check on a certificate from an unknown CA, naming --ca-file, and passes with it', async () => {
    const certificates = createTestCertificates();
    const server = await serve({ tls: { key: certificates.key, cert: certificates.cert } });
    const untrusted = await doctor({ url: server.url.href });
    expect(names(untrusted)).toEqual(['url', 'tcp', 'tls']);
    expect(check(untrusted, 'tls')).toMatchObject({ ok: false, hint: expect.stringMatching(/--ca-file/) });
    const trusted = await runDoctor(createConfig({ options: { url: server.url.href, caFile: certificates.caFile }, env: {}, readTextFile: (path) => readFileSync(path, 'utf8') }), {});
    expect(check(trusted, 'tls')).toMatchObject({ ok: true, detail: expect.stringMatching(/issued by fenbs-mcp test ca/) });
    expect(trusted.ok).toBe(true);
  });

  it('checks through the proxy from the environment instead of connecting directly, unless NO_PROXY covers the host', async () => {
    const proxy = await startConnectProxy();
    cleanups.push(() => proxy.close());
    const server = await serve();
    const proxied = await doctor({ url: server.url.href }, { HTTP_PROXY: proxy.url });
    expect(names(proxied)).toEqual(['url', 'network', 'token', 'protocol', 'tools', 'latency']);
    expect(check(proxied, 'network')!.detail).toMatch(/^through the proxy /);
    expect([...proxy.connects, ...proxy.forwarded].join(' ')).toContain(`127.0.0.1:${server.port}`);
    const direct = await doctor({ url: server.url.href }, { HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' });
    expect(names(direct)).toContain('tcp');
  });
});

describe('formatReport', () => {
  it('writes one line per check with ✓ or ✗, the hint under a failure, and the verdict last', () => {
    const text = formatReport({
      ok: false,
      url: 'https://example.com/mcp',
      checks: [
        { name: 'url', ok: true, detail: 'https://example.com/mcp' },
        { name: 'tcp', ok: false, detail: 'example.com:443: ECONNREFUSED', hint: 'nothing is listening there' },
      ],
    });
    expect(text).toBe('✓ url       https://example.com/mcp\n✗ tcp       example.com:443: ECONNREFUSED\n            hint: nothing is listening there\nfenbs-mcp cannot work with these settings yet: fix the first ✗ above.\n');
  });

  it('ends with the good verdict when every check passed', () => {
    expect(formatReport({ ok: true, url: 'u', checks: [{ name: 'url', ok: true, detail: 'u' }] })).toBe('✓ url       u\nfenbs-mcp can bridge to this server.\n');
  });
});
