// In-process: runDoctor's checks against real loopback servers, and formatReport's human form.

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { startDemoServer } from '../../../src/demo/demo-server.js';
import { runDoctor, type DoctorProgress, type DoctorReport } from '../../../src/doctor/doctor.js';
import { createRedactor } from '../../../src/logging/redactor.js';
import { MAX_MESSAGE_CHARS, toTerminalLine } from '../../../src/core/terminal-text.js';
import { startFaultServer } from '../../helpers/fault-server.js';
import { startSdkV1Server } from '../../helpers/sdk-v1-server.js';
import { startSdkV2Server } from '../../helpers/sdk-v2-server.js';
import { createTestCertificates, freePort, result, sendJson, startConnectProxy, startMcpServer, type Route } from '../../helpers/hardening-servers.js';
import { startInProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';
import { formatReport, redactReport, reportDoctor, toJsonReport } from '../../../src/doctor/report.js';

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
    expect(names(report)).toEqual(['url', 'credential', 'tcp', 'token', 'protocol', 'tools', 'latency']);
    expect(check(report, 'token')!.detail).toBe('accepted (from env FENBS_TOKEN): the server answered initialize');
    expect(check(report, 'protocol')!.detail).toMatch(/^2025-06-18 \(initialize handshake, with a session\)/);
    expect(check(report, 'tools')!.detail).toBe('4 tools listed');
    expect(check(report, 'latency')!.detail).toMatch(/median [\d.]+ ms over 5 calls/);
    expect(report.checks.every((c) => c.hint === undefined)).toBe(true);
  });

  it('fails the token check on a 401, shows the challenge, names the variable to fix and never the token', async () => {
    const server = await serve({
      route: ({ res }) => {
        sendJson(
          res,
          401,
          { error: 'invalid_token' },
          { 'www-authenticate': 'Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"' },
        );
        return true;
      },
    });
    const report = await doctor({ url: server.url.href }, { FENBS_TOKEN: 'expired-token-1234' });
    expect(report.ok).toBe(false);
    expect(names(report)).toEqual(['url', 'credential', 'tcp', 'token']);
    expect(check(report, 'token')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^401 with the token from env FENBS_TOKEN; WWW-Authenticate: Bearer resource_metadata=/),
      hint: expect.stringMatching(/FENBS_TOKEN/),
    });
    expect(JSON.stringify(report)).not.toContain('expired-token-1234');
  });

  it('names the credential it would use by its source, never its value', async () => {
    const demo = await startDemoServer({ token: 'demo-credential-token' });
    cleanups.push(() => demo.close());
    const fromEnv = await doctor({ url: demo.url.href }, { FENBS_TOKEN: 'demo-credential-token' });
    expect(check(fromEnv, 'credential')).toEqual({ name: 'credential', ok: true, detail: 'env FENBS_TOKEN' });
    const fromCommand = await doctor({ url: demo.url.href, tokenCommand: 'printf demo-credential-token' });
    expect(fromCommand.ok).toBe(true);
    expect(check(fromCommand, 'credential')!.detail).toBe('--token-command (ran, and printed a token)');
    expect(check(fromCommand, 'token')!.detail).toBe('accepted (from --token-command): the server answered initialize');
    const fromHeader = await doctor({ url: demo.url.href, header: ['Authorization: Bearer ${DEMO_SECRET}'] }, { DEMO_SECRET: 'demo-credential-token' });
    expect(check(fromHeader, 'credential')!.detail).toBe('-H Authorization from $DEMO_SECRET');
    expect(check(fromHeader, 'token')!.detail).toBe('accepted (from -H Authorization from $DEMO_SECRET): the server answered initialize');
    const none = await doctor({ url: demo.url.href });
    expect(check(none, 'credential')!.detail).toBe('none set: requests go without Authorization');
    for (const report of [fromEnv, fromCommand, fromHeader]) expect(JSON.stringify(report)).not.toContain('demo-credential-token');
  });

  it('shows no ✓ but a warning for a credential that shadows another set one, and names the unused one as the bridge warns about it', async () => {
    const demo = await startDemoServer({ token: 'demo-shadow-token' });
    cleanups.push(() => demo.close());
    const report = await runDoctor(
      createConfig({
        options: { url: demo.url.href, tokenFile: '/tmp/other-token' },
        env: { FENBS_TOKEN: 'demo-shadow-token' },
        readTextFile: () => 'another-token',
      }),
      { FENBS_TOKEN: 'demo-shadow-token' },
    );
    expect(check(report, 'credential')).toEqual({
      name: 'credential',
      ok: true,
      warns: true,
      detail: 'env FENBS_TOKEN is sent; file /tmp/other-token is set but not used: env FENBS_TOKEN comes first',
      hint: 'set only the credential you mean: unset or remove the others, or the bridge keeps sending the first',
    });
    // The bridge runs with it and warns; doctor says the same: a warning with its hint, no failure.
    expect(formatReport(report)).toMatch(/^! credential {2}env FENBS_TOKEN is sent; .*\n {14}hint: set only the credential you mean/m);
    expect(report.ok).toBe(true);
    // The rest is checked as the bridge would run: with the credential that comes first.
    expect(check(report, 'token')!.ok).toBe(true);
    expect(JSON.stringify(report)).not.toMatch(/demo-shadow-token|another-token/);
  });

  it('fails the credential check when --token-command fails, with its exit code and stderr, and goes on to the server', async () => {
    const demo = await startDemoServer({ token: 'demo-unreached-token' });
    cleanups.push(() => demo.close());
    const report = await doctor({ url: demo.url.href, tokenCommand: 'echo "not signed in" >&2; exit 4' });
    expect(report.ok).toBe(false);
    expect(check(report, 'credential')).toMatchObject({
      ok: false,
      detail: '--token-command exited with code 4: not signed in',
      hint: expect.stringMatching(/run the command in a terminal/),
    });
    expect(check(report, 'token')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^401 and no token is set/),
      hint: expect.stringMatching(/check what --token-command prints/),
    });
  });

  it('fails the token check, not the protocol, when a 2025 server refuses initialize for want of a token, and says none is set', async () => {
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method === 'server/discover') return (sendJson(res, 404, { error: 'not found' }), true);
        return (sendJson(res, 401, { error: 'unauthorized' }), true);
      },
    });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'token')).toMatchObject({
      ok: false,
      detail: '401 to initialize and no token is set',
      hint: 'no token is set: set FENBS_TOKEN, --token-file or --token-command',
    });
    expect(check(report, 'protocol')).toMatchObject({ checked: false });
    expect(report.checks.filter((line) => !line.ok).map((line) => line.name)).toEqual(['token']);
    expect(JSON.stringify(report)).not.toMatch(/does not look like an MCP endpoint|rejected or has expired/);
  });

  it('says no token is set on a 403 without one, and hints at setting one, as the bridge answers the same refusal', async () => {
    const server = await serve({ route: ({ res }) => (sendJson(res, 403, { error: 'forbidden' }), true) });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'token')).toMatchObject({
      ok: false,
      detail: '403 and no token is set',
      hint: 'no token is set: set FENBS_TOKEN, --token-file or --token-command (or the server refused the Origin)',
    });
    // The bridge's own answer to the same refusal carries the same hint.
    const bridge = startInProcessBridge(['--url', server.url.href, '--transport', 'streamable-http']);
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect((await bridge.reply(1)).error.data.hint).toBe(check(report, 'token')!.hint);
    bridge.end();
    await bridge.exited;
  });

  it.each([
    ['an HTML page', 200, 'text/html', '<html><body>Welcome</body></html>'],
    ['a 404', 404, 'text/plain', 'Not Found'],
    ['a 405', 405, 'text/plain', 'Method Not Allowed'],
  ])('never passes the token on %s: the server did not look at it, so the token is not checked', async (_, status, type, body) => {
    const server = await serve({ route: ({ res }) => (res.writeHead(status, { 'content-type': type }).end(body), true) });
    const report = await doctor({ url: server.url.href }, { FENBS_TOKEN: 'doctor-unread-token' });
    expect(check(report, 'token')).toMatchObject({
      ok: true,
      checked: false,
      detail: `not checked: the server answered ${status} and no MCP request, so nothing shows it read the token from env FENBS_TOKEN`,
    });
    expect(formatReport(report)).toMatch(/^– token {7}not checked/m);
    expect(formatReport(report)).not.toMatch(/^✓ token/m);
    expect(check(report, 'protocol')!.ok).toBe(false);
  });

  it('marks no credential as not checked, and fails the token check when the server wants one', async () => {
    const server = await serve({ route: ({ res }) => (res.writeHead(401, { 'www-authenticate': 'Bearer' }).end(), true) });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'credential')).toMatchObject({ ok: true, checked: false, detail: 'none set: requests go without Authorization' });
    expect(formatReport(report)).toMatch(/^– credential {2}none set/m);
    expect(check(report, 'token')!.ok).toBe(false);
    expect(report.ok).toBe(false);
  });

  it('fails the protocol check against a server that is not MCP, with a hint to check --url', async () => {
    const server = await serve({ route: ({ res }) => (res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome</body></html>'), true) });
    const report = await doctor({ url: server.url.href });
    expect(report.ok).toBe(false);
    expect(report.revision).toBeUndefined();
    expect(check(report, 'token')).toMatchObject({
      ok: true,
      checked: false,
      detail: 'not checked: the server answered 200 and no MCP request, so nothing shows it needs no token',
    });
    expect(check(report, 'protocol')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^neither server\/discover nor initialize worked/),
      hint: expect.stringMatching(/does not look like an MCP endpoint/),
    });
    expect(names(report)).not.toContain('tools');
  });

  it('fails the protocol check when initialize is answered with a JSON-RPC error', async () => {
    const server = await serve({
      route: ({ res, message }) => (sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32600, message: 'nope' } }), true),
    });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'protocol')).toMatchObject({ ok: false, detail: expect.stringMatching(/initialize failed/) });
  });

  it('fails the tools check when the server answers the handshake but not tools/list', async () => {
    const server = await serve({
      route: ({ res, message }) =>
        message?.method === 'tools/list' &&
        (sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }), true),
    });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'protocol')!.ok).toBe(true);
    expect(check(report, 'tools')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/tools\/list failed/),
      hint: expect.stringMatching(/check its logs/),
    });
    expect(names(report)).not.toContain('latency');
  });

  it('fails the TCP check where nothing listens, with a hint to check the port, and contacts nothing else', async () => {
    const port = await freePort();
    const report = await doctor({ url: `http://127.0.0.1:${port}/mcp` });
    expect(report.ok).toBe(false);
    expect(names(report)).toEqual(['url', 'credential', 'tcp']);
    expect(check(report, 'tcp')).toMatchObject({
      ok: false,
      detail: `127.0.0.1:${port}: ECONNREFUSED`,
      hint: expect.stringMatching(/nothing is listening there/),
    });
  });

  it('fails the connect check when the server takes the connection but resets the request, with the failure and its hint', async () => {
    const server = await serve();
    // The first connection is doctor's TCP check; the second carries the first request and is reset.
    server.connectionFaults.push(
      (socket) => socket.on('error', () => undefined),
      (socket) => socket.resetAndDestroy(),
    );
    const report = await doctor({ url: server.url.href });
    expect(names(report)).toEqual(['url', 'credential', 'tcp', 'connect']);
    expect(check(report, 'connect')).toMatchObject({ ok: false, detail: expect.any(String), hint: expect.any(String) });
    expect(report.ok).toBe(false);
  });

  it('resolves a host name first, and fails the DNS check for one that does not resolve', async () => {
    const resolved = await doctor({ url: `http://localhost:${await freePort()}/mcp` });
    expect(check(resolved, 'dns')!.ok).toBe(true);
    const report = await doctor({ url: 'https://nonexistent.invalid/mcp' });
    expect(names(report)).toEqual(['url', 'credential', 'dns']);
    expect(check(report, 'dns')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^nonexistent\.invalid: /),
      hint: expect.stringMatching(/HTTPS_PROXY/),
    });
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
          sendJson(
            res,
            200,
            result(message.id, {
              supportedVersions: ['2026-07-28'],
              capabilities: { tools: {} },
              _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'modern-board', version: '2.0.0' } },
            }),
          );
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
    expect(check(report, 'protocol')!.detail).toBe(
      '2026-07-28 (server/discover, no handshake); versions 2026-07-28; server modern-board 2.0.0; capabilities tools; transport Streamable HTTP',
    );
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

  it('fails the TLS check on a port that speaks plain HTTP saying so, and suggests http:// rather than --ca-file', async () => {
    const server = await serve();
    const report = await doctor({ url: server.url.href.replace('http:', 'https:') });
    expect(check(report, 'tls')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/answered in plain HTTP, not TLS/),
      hint: expect.stringMatching(/--url http:\/\//),
    });
    expect(check(report, 'tls')!.hint).not.toMatch(/--ca-file/);
  });

  it('fails the TLS check on a certificate from an unknown CA, naming --ca-file, and passes with it', async () => {
    const certificates = createTestCertificates();
    const server = await serve({ tls: { key: certificates.key, cert: certificates.cert } });
    const untrusted = await doctor({ url: server.url.href });
    expect(names(untrusted)).toEqual(['url', 'credential', 'tcp', 'tls']);
    expect(check(untrusted, 'tls')).toMatchObject({ ok: false, hint: expect.stringMatching(/--ca-file/) });
    const trusted = await runDoctor(
      createConfig({ options: { url: server.url.href, caFile: certificates.caFile }, env: {}, readTextFile: (path) => readFileSync(path, 'utf8') }),
      {},
    );
    expect(check(trusted, 'tls')).toMatchObject({ ok: true, detail: expect.stringMatching(/issued by fenbs-mcp test ca/) });
    expect(trusted.ok).toBe(true);
  });

  it('checks through the proxy from the environment instead of connecting directly, unless NO_PROXY covers the host', async () => {
    const proxy = await startConnectProxy();
    cleanups.push(() => proxy.close());
    const server = await serve();
    const proxied = await doctor({ url: server.url.href }, { HTTP_PROXY: proxy.url });
    expect(names(proxied)).toEqual(['url', 'credential', 'network', 'token', 'protocol', 'tools', 'latency']);
    expect(check(proxied, 'network')!.detail).toMatch(/^through the proxy /);
    expect([...proxy.connects, ...proxy.forwarded].join(' ')).toContain(`127.0.0.1:${server.port}`);
    const direct = await doctor({ url: server.url.href }, { HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' });
    expect(names(direct)).toContain('tcp');
  });

  it.each([
    ['a NO_PROXY entry with the port', (port: number) => `127.0.0.1:${port}`, false],
    ['NO_PROXY " *" (only a bare * means every host)', () => ' *', true],
    ['a NO_PROXY entry with a "*." prefix', () => '*.0.0.1', false],
  ])('says the bridge goes through the proxy exactly when the bridge does, for %s', async (_title, noProxy, throughProxy) => {
    const proxy = await startConnectProxy();
    cleanups.push(() => proxy.close());
    const server = await serve();
    const env = { HTTP_PROXY: proxy.url, NO_PROXY: noProxy(server.port) };
    const report = await doctor({ url: server.url.href }, env);
    const tunnelled = () => proxy.connects.length + proxy.forwarded.length;
    const before = tunnelled();
    const bridge = startInProcessBridge(['--url', server.url.href], env);
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init')).result).toBeDefined();
    expect({ doctor: check(report, 'network')?.detail.startsWith('through the proxy') ?? false, bridge: tunnelled() > before }).toEqual({
      doctor: throughProxy,
      bridge: throughProxy,
    });
    expect(names(report)).toContain(throughProxy ? 'network' : 'tcp');
  });

  it('names a proxy that carries credentials by its origin alone, in every check', async () => {
    const proxy = await startConnectProxy();
    cleanups.push(() => proxy.close());
    const server = await serve();
    const report = await doctor({ url: server.url.href }, { HTTP_PROXY: proxy.url.replace('//', '//proxy-user:proxy-pass-4321@') });
    expect(check(report, 'network')!.detail).toBe(`through the proxy ${proxy.url} (DNS, TCP and TLS are checked by the request below)`);
    expect(JSON.stringify(report)).not.toMatch(/proxy-user|proxy-pass-4321/);
    expect(report.ok).toBe(true);
  });
});

describe('runDoctor against servers that are MCP and servers that only look like it', () => {
  it('fails a plain JSON echo server, which answers every request with the request as its result, with a hint that this is no MCP endpoint', async () => {
    const server = await serve({ route: ({ res, message }) => (sendJson(res, 200, result(message?.id ?? null, message)), true) });
    const report = await doctor({ url: server.url.href });
    expect(report.ok).toBe(false);
    expect(check(report, 'protocol')).toMatchObject({
      ok: false,
      detail: 'the initialize result has no protocolVersion, capabilities, serverInfo.name: not an MCP initialize result',
      hint: expect.stringMatching(/^this URL does not look like an MCP endpoint/),
    });
    expect(names(report)).not.toContain('tools');
  });

  it('fails a server that echoes the request verbatim (no result) with the same hint', async () => {
    const server = await serve({ route: ({ res, message }) => (sendJson(res, 200, message), true) });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'protocol')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^initialize failed: /),
      hint: expect.stringMatching(/does not look like an MCP endpoint/),
    });
  });

  it('fails the tools check when a tools/list result has no tools array', async () => {
    const server = await serve({
      route: ({ res, message }) => message?.method === 'tools/list' && (sendJson(res, 200, result(message.id, { items: [] })), true),
    });
    const report = await doctor({ url: server.url.href });
    expect(check(report, 'protocol')!.ok).toBe(true);
    expect(check(report, 'tools')).toMatchObject({
      ok: false,
      detail: 'the tools/list result has no tools array: not an MCP tools/list result',
      hint: expect.stringMatching(/does not look like an MCP endpoint/),
    });
  });

  it('does not take a server/discover result without supportedVersions for a 2026-07-28 server', async () => {
    const server = await serve({
      route: ({ res, message }) => message?.method === 'server/discover' && (sendJson(res, 200, result(message.id, { hello: 'world' })), true),
    });
    const report = await doctor({ url: server.url.href });
    expect(report).toMatchObject({ ok: true, revision: '2025-06-18' });
  });

  it('passes the official SDK v1 server (JSON replies and event streams), naming the revision and not an era', async () => {
    for (const mode of ['json', 'sse'] as const) {
      const server = await startSdkV1Server({ mode, token: 'sdk-v1-doctor-token' });
      cleanups.push(() => server.close());
      const report = await doctor({ url: server.url }, { FENBS_TOKEN: 'sdk-v1-doctor-token' });
      expect(report, mode).toMatchObject({ ok: true, revision: '2025-06-18' });
      expect(check(report, 'protocol')!.detail).toMatch(/^2025-06-18 \(initialize handshake, with a session\); server fenbs-mcp-test-v1 1\.0\.0/);
      expect(check(report, 'tools')!.detail).toBe('3 tools listed');
      expect(JSON.stringify(report)).not.toMatch(/legacy/i);
    }
  });

  it('passes the official SDK v2 server', async () => {
    const server = await startSdkV2Server({ token: 'sdk-v2-doctor-token' });
    cleanups.push(() => server.close());
    const report = await doctor({ url: server.url }, { FENBS_TOKEN: 'sdk-v2-doctor-token' });
    expect(report.ok).toBe(true);
    expect(check(report, 'protocol')!.detail).toMatch(/fenbs-mcp-test-v2 2\.0\.0/);
    expect(check(report, 'tools')!.detail).toMatch(/^\d+ tools? listed$/);
    expect(JSON.stringify(report)).not.toMatch(/legacy/i);
  });

  it('names where a redirect points, with its query values masked, and follows it nowhere', async () => {
    const server = await serve({ route: ({ res }) => (res.writeHead(307, { location: 'https://elsewhere.example/mcp?sig=s3cr3t-signature' }).end(), true) });
    const report = await doctor({ url: server.url.href });
    expect(names(report)).toEqual(['url', 'credential', 'tcp', 'connect']);
    expect(check(report, 'connect')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /^the server redirected server\/discover \(307\) to https:\/\/elsewhere\.example\/mcp\?sig=\S+; doctor, like the bridge, follows only a 307 or 308 to the same origin$/,
      ),
      hint: expect.stringMatching(/pass it with --url/),
    });
    expect(JSON.stringify(report)).not.toContain('s3cr3t-signature');
    expect(server.requests).toHaveLength(1);
  });

  it('gives up on a server that takes the request and never answers at --request-timeout, naming the option', async () => {
    const server = await serve({ route: () => true });
    const started = performance.now();
    const report = await doctor({ url: server.url.href, requestTimeout: '300' });
    const elapsedMs = performance.now() - started;
    expect(check(report, 'connect')).toMatchObject({
      ok: false,
      detail: 'no answer to server/discover within 300 ms (--request-timeout)',
      hint: expect.stringMatching(/raise --request-timeout/),
    });
    expect(elapsedMs).toBeLessThan(5_000);
  });

  it('reports each check as it starts and as it ends, in order', async () => {
    const demo = await startDemoServer({ token: 'demo-progress-token' });
    cleanups.push(() => demo.close());
    const events: DoctorProgress[] = [];
    const config = createConfig({ options: { url: demo.url.href }, env: { FENBS_TOKEN: 'demo-progress-token' }, readTextFile: () => '' });
    await runDoctor(config, { FENBS_TOKEN: 'demo-progress-token' }, { onProgress: (event) => events.push(event) });
    expect(events.map((event) => (event.kind === 'start' ? `start ${event.name}` : `done ${event.check.name}`))).toEqual([
      'done url',
      'done credential',
      'start tcp',
      'done tcp',
      'start token',
      // The token passes once a request was answered: the 2025 demo answers initialize, not server/discover.
      'start protocol',
      'done token',
      'done protocol',
      'start tools',
      'done tools',
      'start latency',
      'done latency',
    ]);
  });
});

describe('reportDoctor', () => {
  /** A stream stand-in that keeps what is written; `isTTY` as a terminal's stderr has it. */
  const sink = (isTTY: boolean) => {
    const chunks: string[] = [];
    return { chunks, isTTY, write: (text: string) => chunks.push(text), text: () => chunks.join('') };
  };
  const run = async (json: boolean, tty: boolean, env: Record<string, string> = {}) => {
    const demo = await startDemoServer({ token: 'demo-report-token' });
    cleanups.push(() => demo.close());
    const stdout = sink(false);
    const stderr = sink(tty);
    const fullEnv = { FENBS_TOKEN: 'demo-report-token', ...env };
    const config = createConfig({ options: { url: demo.url.href }, env: fullEnv, readTextFile: () => '' });
    const report = await reportDoctor(config, fullEnv, { stdout, stderr, json, redact: createRedactor(['demo-report-token']) });
    return { report, stdout, stderr };
  };

  it('prints the text report on stdout one check at a time, and a plain line on stderr as each check starts when stderr is no terminal', async () => {
    const { report, stdout, stderr } = await run(false, false);
    expect(stdout.text()).toBe(formatReport(report));
    expect(stdout.chunks.length).toBe(report.checks.length + 1);
    expect(stderr.text()).toMatch(
      /^… tcp +connecting to 127\.0\.0\.1:\d+ \(--connect-timeout 10000 ms\)\n… token +POST server\/discover to http:\/\/127\.0\.0\.1:\d+\/mcp\n… protocol +initialize \(2025-06-18\)\n… tools +tools\/list\n… latency +timing 5 tools\/list round trips\n$/,
    );
    expect(stderr.text()).not.toContain('\x1b');
  });

  it('draws a spinner on a terminal and erases it before each check line', async () => {
    const { stdout, stderr } = await run(false, true);
    expect(stderr.text()).toMatch(new RegExp(`\r${String.fromCharCode(27)}\\[2K⠋ token +POST server/discover`));
    expect(stderr.text().endsWith('\r\x1b[2K')).toBe(true);
    expect(stdout.text()).toMatch(/^✓ latency /m);
  });

  it('prints only the final report as one JSON object with json, nothing on stderr', async () => {
    const { report, stdout, stderr } = await run(true, true);
    expect(stdout.chunks).toEqual([`${JSON.stringify(toJsonReport(report))}\n`]);
    expect(stderr.chunks).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('gives each check of the JSON report its status, and a check not done no ok at all', () => {
    const report = {
      ok: true,
      url: 'http://127.0.0.1/mcp',
      checks: [
        { name: 'url', ok: true, detail: 'a' },
        { name: 'credential', ok: true, checked: false as const, detail: 'none set' },
        { name: 'shadowed', ok: true, warns: true as const, detail: 'b' },
        { name: 'tools', ok: false, detail: 'c', hint: 'd' },
      ],
    };
    expect(toJsonReport(report)).toEqual({
      ok: true,
      url: 'http://127.0.0.1/mcp',
      checks: [
        { name: 'url', ok: true, detail: 'a', status: 'passed' },
        { name: 'credential', detail: 'none set', status: 'not-checked' },
        { name: 'shadowed', ok: true, warns: true, detail: 'b', status: 'warning' },
        { name: 'tools', ok: false, detail: 'c', hint: 'd', status: 'failed' },
      ],
    });
  });
});

describe('reportDoctor against a server whose strings carry terminal controls', () => {
  const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil.example/\x1b\\\x1b[2J\x07\x9b2J\u202Eok\rhidden\nforged';
  /** What a terminal would act on, a tab included; line feeds are counted as lines instead. */
  // eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
  const ACTS_ON = /[\x00-\x09\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
  const sink = (isTTY: boolean) => {
    const chunks: string[] = [];
    return { chunks, isTTY, write: (text: string) => chunks.push(text), text: () => chunks.join('') };
  };
  const report = async (url: URL, json: boolean, secrets: string[] = []) => {
    const stdout = sink(false);
    const stderr = sink(true);
    const config = createConfig({ options: { url: url.href }, env: {}, readTextFile: () => '' });
    const result = await reportDoctor(config, {}, { stdout, stderr, json, redact: createRedactor(secrets) });
    return { result, stdout: stdout.text(), stderr: stderr.text() };
  };

  it('shows the serverInfo name and version, capability names and a JSON-RPC error with every control visible, one line per check', async () => {
    const server = await serve({
      route: ({ res, message }) => {
        if (message?.method === 'initialize')
          return (
            sendJson(
              res,
              200,
              result(message.id, {
                protocolVersion: '2025-06-18',
                capabilities: { [`tools${HOSTILE}`]: {} },
                serverInfo: { name: `name${HOSTILE}`, version: `1${HOSTILE}` },
              }),
            ),
            true
          );
        if (message?.method === 'tools/list')
          return (sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32000, message: `boom${HOSTILE}` } }), true);
        return false;
      },
    });
    const { result: checked, stdout, stderr } = await report(server.url, false);
    const protocol = checked.checks.find((c) => c.name === 'protocol')!;
    expect(protocol.detail).toContain(`server name${HOSTILE} 1${HOSTILE}`);
    expect(stdout).toContain(`server name${toTerminalLine(HOSTILE)} 1${toTerminalLine(HOSTILE)}; capabilities tools${toTerminalLine(HOSTILE)}`);
    expect(stdout).toContain(`tools/list failed: ${toTerminalLine(JSON.stringify({ code: -32000, message: `boom${HOSTILE}` }))}`);
    for (const line of stdout.split('\n')) expect(line).not.toMatch(ACTS_ON);
    // url, credential, tcp, token, protocol, tools and its hint, the verdict.
    expect(stdout.trimEnd().split('\n')).toHaveLength(8);
    expect(stderr.replaceAll('\r\x1b[2K', '')).not.toMatch(ACTS_ON);
    const json = await report(server.url, true);
    expect(json.stdout).toBe(`${JSON.stringify(toJsonReport(json.result))}\n`);
    expect(json.stdout).toContain(JSON.stringify(`name${HOSTILE}`).slice(1, -1));
  });

  it('masks a secret the server echoes before escaping it, so a secret with a C1 character (allowed in a header value) is still recognised', async () => {
    const secret = 'header-secret-\x9b-13579';
    const server = await serve({
      route: ({ res, message }) =>
        message?.method === 'initialize' &&
        (sendJson(res, 200, result(message.id, { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: `echo ${secret}` } })), true),
    });
    const { stdout } = await report(server.url, false, [secret]);
    expect(stdout).toMatch(/server echo \S+; capabilities none/);
    expect(stdout).not.toContain(secret);
    expect(stdout).not.toContain(toTerminalLine(secret));
  });

  describe('cuts a megabyte JSON-RPC error message at MAX_MESSAGE_CHARS in the text report; --json keeps it whole', () => {
    const PREFIX = 'tools/list failed: {"code":-32000,"message":"';
    const SECRET = 'straddling-secret-13579';
    const CUT = MAX_MESSAGE_CHARS - 1; // code points kept before the …
    const serveError = (message: string) =>
      serve({
        route: ({ res, message: request }) =>
          request?.method === 'tools/list' && (sendJson(res, 200, { jsonrpc: '2.0', id: request.id, error: { code: -32000, message } }), true),
      });
    const toolsLine = (stdout: string) => stdout.split('\n').find((line) => line.startsWith('✗ tools'))!;

    it('masks a secret across the cut before cutting, so no piece of it shows', async () => {
      const message = `${'x'.repeat(CUT - PREFIX.length - 4)}${SECRET}${'y'.repeat(1 << 20)}`;
      const server = await serveError(message);
      const { stdout } = await report(server.url, false, [SECRET]);
      expect(toolsLine(stdout)).toBe(`✗ tools       ${PREFIX}${'x'.repeat(CUT - PREFIX.length - 4)}[RED…`);
      expect(stdout).not.toContain(SECRET.slice(0, 4));
      const json = await report(server.url, true, [SECRET]);
      expect(json.result.checks.find((c) => c.name === 'tools')!.detail).toBe(
        `tools/list failed: ${JSON.stringify({ code: -32000, message: message.replace(SECRET, '[REDACTED]') })}`,
      );
    });

    it('cuts before escaping, so each control kept is shown by its whole escape', async () => {
      const server = await serveError('\x9b'.repeat(1 << 20));
      const { stdout } = await report(server.url, false);
      expect(toolsLine(stdout)).toBe(`✗ tools       ${PREFIX}${'\\x9b'.repeat(CUT - PREFIX.length)}…`);
    });
  });

  it('shows a WWW-Authenticate header with C1 controls (bytes 0x80-0x9f, allowed in a field value) escaped', async () => {
    const server = await serve({
      route: ({ res }) => {
        // Latin-1 field-value bytes: U+009B is the one-byte CSI, U+009D an OSC, U+009C its terminator.
        res.writeHead(401, { 'www-authenticate': 'Bearer error="\x9b2J\x9d0;PWNED\x9c"', 'content-type': 'application/json' }).end('{}');
        return true;
      },
    });
    const { stdout } = await report(server.url, false);
    expect(stdout).toContain('WWW-Authenticate: Bearer error="\\x9b2J\\x9d0;PWNED\\x9c"');
    expect(stdout).not.toMatch(ACTS_ON);
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
    expect(text).toBe(
      '✓ url         https://example.com/mcp\n✗ tcp         example.com:443: ECONNREFUSED\n              hint: nothing is listening there\nfenbs-mcp cannot work with these settings yet: fix the first ✗ above.\n',
    );
  });

  it('puts every detail in one column, the longest name (credential) included, and marks what was not checked with –', () => {
    const text = formatReport({
      ok: true,
      url: 'u',
      checks: [
        { name: 'url', ok: true, detail: 'first' },
        { name: 'credential', ok: true, checked: false, detail: 'second' },
        { name: 'tcp', ok: true, detail: 'third' },
        { name: 'protocol', ok: true, detail: 'fourth' },
      ],
    });
    const lines = text.split('\n').slice(0, 4);
    expect(lines.map((line, i) => line.indexOf(['first', 'second', 'third', 'fourth'][i]!))).toEqual([14, 14, 14, 14]);
    expect(lines[1]).toBe('– credential  second');
  });

  it('ends with the good verdict when every check passed', () => {
    expect(formatReport({ ok: true, url: 'u', checks: [{ name: 'url', ok: true, detail: 'u' }] })).toBe(
      '✓ url         u\nfenbs-mcp can bridge to this server.\n',
    );
  });
});

describe('runDoctor and redactReport, edge cases', () => {
  const fault = async () => {
    const server = await startFaultServer();
    cleanups.push(() => server.close());
    return server;
  };

  it('connects directly when NO_PROXY names a domain suffix of the host', async () => {
    const server = await fault();
    server.every('server/discover', (request) => ({ kind: 'json', body: { jsonrpc: '2.0', id: request.id, result: { supportedVersions: ['2026-07-28'] } } }));
    server.every('tools/list', (request) => ({ kind: 'json', body: { jsonrpc: '2.0', id: request.id, result: { tools: [] } } }));
    const port = await freePort(); // no proxy listens here: only a direct connection can pass
    const report = await doctor({ url: server.url }, { HTTP_PROXY: `http://127.0.0.1:${port}`, NO_PROXY: 'example.com, .0.0.1' });
    expect(names(report)).toContain('tcp');
    expect(names(report)).not.toContain('network');
  });
});

describe('redactReport', () => {
  it('masks the run’s secrets in the URL, details and hints, and leaves a check without a hint without one', () => {
    const secret = 'doctor-secret-98765';
    const report: DoctorReport = {
      ok: false,
      url: `https://example.com/mcp?key=${secret}`,
      checks: [
        { name: 'token', ok: false, detail: `401; WWW-Authenticate: Bearer error="${secret}"`, hint: `set a valid one, not ${secret}` },
        { name: 'url', ok: true, detail: 'fine' },
      ],
    };
    const redacted = redactReport(report, createRedactor([secret]));
    expect(JSON.stringify(redacted)).not.toContain(secret);
    expect(redacted.checks[1]).toEqual({ name: 'url', ok: true, detail: 'fine' });
    expect(redacted.checks[0]!.hint).toMatch(/^set a valid one, not /);
  });
});
