// Shared suite, corporate networks and secrets: proxies, private CAs, redirects, and a token that never leaks.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createTestCertificates,
  result,
  sendJson,
  sendSse,
  startConnectProxy,
  serversForFile,
  stdoutProblems,
  type McpServer,
  type TestCertificates,
} from '../helpers/hardening-servers.js';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
const call = (id: string, name = id, params: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, ...params },
});
const okText = (name: string) => ({ content: [{ type: 'text', text: `ok ${name}` }] });

/** Defines the suite against bridges started by `mode`. */
export function defineNetworkSuite(mode: BridgeMode): void {
  const { serve, track } = serversForFile();
  const bridge = (args: string[], env: Record<string, string> = {}): RunningBridge => {
    const spawned = mode.start(args, env);
    track(() => spawned.kill());
    return spawned;
  };
  /** One request through a fresh bridge; resolves with its reply. */
  const ask = async (args: string[], env: Record<string, string> = {}, id = 'q'): Promise<any> => {
    const spawned = bridge(args, env);
    spawned.send(call(id));
    const reply = await spawned.reply(id, 15_000);
    expect(stdoutProblems(spawned.lines, [id])).toEqual([]);
    return reply;
  };

  let certs: TestCertificates;
  let tlsServer: McpServer;
  beforeAll(async () => {
    certs = createTestCertificates();
    tlsServer = await serve({ tls: { key: certs.key, cert: certs.cert } });
  });

  describe('proxies from the environment', () => {
    it.each(['HTTP_PROXY', 'http_proxy'])('tunnels a request to an http:// target through %s', async (name) => {
      const [proxy, server] = [await startConnectProxy(), await serve()];
      track(() => proxy.close());
      const reply = await ask(['--url', server.url.href], { [name]: proxy.url, FENBS_TOKEN: 'tunnelled-token' });
      expect(reply.result).toEqual(okText('q'));
      expect([...proxy.connects, ...proxy.forwarded].join(' ')).toContain(`127.0.0.1:${server.port}`);
      expect(server.requests[0]!.headers.authorization).toBe('Bearer tunnelled-token');
    });

    it.each(['HTTPS_PROXY', 'https_proxy'])('tunnels a request to an https:// target through %s', async (name) => {
      const proxy = await startConnectProxy();
      track(() => proxy.close());
      const reply = await ask(['--url', tlsServer.url.href, '--ca-file', certs.caFile], { [name]: proxy.url });
      expect(reply.result).toEqual(okText('q'));
      expect(proxy.connects).toContain(`127.0.0.1:${tlsServer.port}`);
    });

    it.each([
      ['HTTP_PROXY', 'NO_PROXY', '127.0.0.1'],
      ['HTTP_PROXY', 'no_proxy', '127.0.0.1'],
      ['HTTP_PROXY', 'NO_PROXY', 'example.com, 127.0.0.1'],
      ['HTTP_PROXY', 'NO_PROXY', '*'],
    ])('goes direct when %s is set but %s=%j covers the host', async (proxyName, noProxyName, noProxy) => {
      const [proxy, server] = [await startConnectProxy(), await serve()];
      track(() => proxy.close());
      const reply = await ask(['--url', server.url.href], { [proxyName]: proxy.url, [noProxyName]: noProxy });
      expect(reply.result).toEqual(okText('q'));
      expect(proxy.connects).toEqual([]);
      expect(proxy.forwarded).toEqual([]);
    });

    it('answers with a proxy error and a hint when the proxy refuses the tunnel, without retrying', async () => {
      const [proxy, server] = [await startConnectProxy({ refuse: true }), await serve()];
      track(() => proxy.close());
      const reply = await ask(['--url', server.url.href], { HTTP_PROXY: proxy.url });
      expect(reply.error.data).toMatchObject({ bridgeCode: 'PROXY_FAILED', hint: expect.stringMatching(/PROXY/) });
      expect(proxy.connects).toHaveLength(1);
      expect(server.requests).toEqual([]);
    });
  });

  describe('private certificate authorities', () => {
    it('fails with a hint naming --ca-file when the server certificate is not trusted', async () => {
      const reply = await ask(['--url', tlsServer.url.href]);
      expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_TLS', hint: expect.stringContaining('--ca-file') });
    });

    it('says the server answered in plain HTTP, and suggests http://, when https:// names a port that speaks plain HTTP', async () => {
      const plain = await serve();
      const https = new URL(plain.url.href.replace('http:', 'https:'));
      const reply = await ask(['--url', https.href]);
      expect(reply.error.message).toMatch(/answered in plain HTTP, not TLS/);
      expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_TLS', hint: expect.stringContaining(`--url http://${https.host}${https.pathname}`) });
      expect(reply.error.data.hint).not.toMatch(/--ca-file/);
    });

    it('ends a TLS failure message with the words, not with the line break OpenSSL puts after them', async () => {
      // A server that answers every ClientHello with a fatal handshake_failure alert (RFC 8446 §6).
      const refusing = createNetServer((socket) => socket.once('data', () => socket.end(Buffer.from([0x15, 3, 3, 0, 2, 2, 40]))));
      await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
      track(() => new Promise<void>((resolve) => refusing.close(() => resolve())));
      const reply = await ask(['--url', `https://127.0.0.1:${(refusing.address() as AddressInfo).port}/mcp`]);
      expect(reply.error.message).toMatch(/^TLS with .* failed: .*alert handshake failure/);
      expect(reply.error.message).not.toMatch(/\s$/);
    });

    type TrustPath = [what: string, args: (c: TestCertificates) => string[], env: (c: TestCertificates) => Record<string, string>];
    const trustPaths: TrustPath[] = [
      ['--ca-file with the CA', (c) => ['--ca-file', c.caFile], () => ({})],
      // NODE_EXTRA_CA_CERTS alone is read by Node at process start, so only a spawned bridge can show it.
      ...(mode.name === 'spawned' ? [['NODE_EXTRA_CA_CERTS with the CA', () => [], (c) => ({ NODE_EXTRA_CA_CERTS: c.caFile })] satisfies TrustPath] : []),
      ['NODE_EXTRA_CA_CERTS with the CA next to a --ca-file with another CA', (c) => ['--ca-file', c.otherCaFile], (c) => ({ NODE_EXTRA_CA_CERTS: c.caFile })],
    ];
    it.each(trustPaths)('trusts the server through %s', async (_, args, env) => {
      const reply = await ask(['--url', tlsServer.url.href, ...args(certs)], env(certs));
      expect(reply.result).toEqual(okText('q'));
    });

    it('does not trust the server through a --ca-file with an unrelated CA', async () => {
      const reply = await ask(['--url', tlsServer.url.href, '--ca-file', certs.otherCaFile]);
      expect(reply.error.data.bridgeCode).toBe('REMOTE_TLS');
    });
  });

  describe('redirects', () => {
    it.each([301, 302, 303, 307, 308])('never lets the token reach another origin after a cross-origin %i', async (status) => {
      const elsewhere = await serve();
      const server = await serve({ route: ({ res }) => (res.writeHead(status, { location: elsewhere.url.href, 'content-length': '0' }).end(), true) });
      const reply = await ask(['--url', server.url.href], { FENBS_TOKEN: 'redirect-token' });
      expect(reply.error.data).toMatchObject({ bridgeCode: 'REDIRECT_REFUSED', location: elsewhere.url.href });
      expect(server.requests[0]!.headers.authorization).toBe('Bearer redirect-token');
      expect(elsewhere.requests.filter((r) => JSON.stringify(r.rawHeaders).includes('redirect-token'))).toEqual([]);
      expect(elsewhere.requests).toEqual([]);
    });
  });

  describe('the token', () => {
    // --log-file is opened by the CLI; in-process the log is the test's stream, which the stderr check reads.
    const logs = mode.name === 'spawned' ? 'stdout, stderr or the log file' : 'stdout or the log';
    it(`never appears in ${logs} of a whole run at trace, even when the server echoes it`, async () => {
      const token = `fenbs-secret-${randomBytes(16).toString('hex')}`;
      const logFile = mode.name === 'spawned' ? join(mkdtempSync(join(tmpdir(), 'fenbs-log-')), 'bridge.log') : undefined;
      const echo = (auth: unknown) => `you sent Authorization: ${String(auth)} (token ${String(auth).slice(7)})`;
      const ECHOES: Record<string, (res: ServerResponse, id: string, auth: unknown) => unknown> = {
        'echo-500-text': (res, _, auth) => res.writeHead(500, { 'content-type': 'text/plain' }).end(echo(auth)),
        'echo-401-html': (res, _, auth) =>
          res.writeHead(401, { 'content-type': 'text/html', 'www-authenticate': 'Bearer error="invalid_token"' }).end(`<p>${echo(auth)}</p>`),
        'echo-400-jsonrpc': (res, id, auth) =>
          sendJson(res, 400, { jsonrpc: '2.0', id, error: { code: -32602, message: echo(auth), data: { authorization: auth } } }),
        'echo-200-not-json': (res, _, auth) => sendJson(res, 200, `<html>${echo(auth)}</html>`),
        'echo-sse-not-json': (res, id, auth) => sendSse(res, `data: ${echo(auth)}\n\ndata: ${JSON.stringify(result(id, { ok: true }))}\n\n`),
      };
      const server = await serve({
        sessions: true,
        route: ({ req, res, message }) => {
          const handler = ECHOES[message?.params?.name];
          if (handler === undefined) return false;
          void handler(res, message.id, req.headers.authorization);
          return true;
        },
      });
      const spawned = bridge(['--url', server.url.href, '--log-level', 'trace', ...(logFile === undefined ? [] : ['--log-file', logFile])], {
        FENBS_TOKEN: token,
      });
      spawned.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      await spawned.reply('init');
      spawned.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const ids = Object.keys(ECHOES);
      for (const id of ids) spawned.send(call(id));
      for (const id of ids) await spawned.reply(id);
      spawned.end();
      await expectCleanEnd(spawned, 'input-ended');

      expect(server.requests.every((r) => r.headers.authorization === `Bearer ${token}`)).toBe(true);
      expect(stdoutProblems(spawned.lines, ['init', ...ids])).toEqual([]);
      expect(spawned.stderr()).toMatch(/"level":20/); // the most verbose lines were written, and are checked below
      const secretPart = token.slice('fenbs-secret-'.length);
      expect(spawned.lines.join('\n')).not.toContain(secretPart);
      expect(spawned.stderr()).not.toContain(secretPart);
      if (logFile !== undefined) expect(readFileSync(logFile, 'utf8')).not.toContain(secretPart);
    });

    // Refusals at start-up and their exit codes and warnings come from the CLI around runBridge: spawned only.
    const cliOnly = it.runIf(mode.name === 'spawned');

    cliOnly.each([
      'Authorization: Bearer sekrit-1234',
      'authorization:Bearer sekrit-1234',
      'Proxy-Authorization: Basic sekrit-1234',
      'Cookie: sid=sekrit-1234',
    ])('refuses -H %j with exit 2 and says how to pass the token safely', async (header) => {
      const spawned = bridge(['--url', 'https://example.invalid/mcp', '-H', header]);
      expect(await spawned.exitCode).toBe(2);
      expect(spawned.stderr()).toMatch(/FENBS_TOKEN=<token>/);
      expect(spawned.stderr()).toMatch(/--token-file/);
      expect(spawned.stderr()).not.toContain('sekrit-1234');
      expect(spawned.lines).toEqual([]);
    });

    cliOnly('refuses to send a token over http:// to a non-loopback host without --allow-http (exit 2)', async () => {
      const spawned = bridge(['--url', 'http://example.invalid/mcp'], { FENBS_TOKEN: 'plain-http-token' });
      expect(await spawned.exitCode).toBe(2);
      expect(spawned.stderr()).toMatch(/--allow-http/);
      expect(spawned.stderr()).not.toContain('plain-http-token');
      expect(spawned.lines).toEqual([]);
    });

    cliOnly('accepts http:// to a non-loopback host with --allow-http and warns', async () => {
      const spawned = bridge(['--url', 'http://example.invalid/mcp', '--allow-http'], { FENBS_TOKEN: 'plain-http-token' });
      spawned.end(); // no request: nothing is contacted
      expect(await spawned.exitCode).toBe(0);
      expect(spawned.stderr()).toMatch(/unencrypted/);
    });

    it('reads the token from --token-file, without its trailing newline', async () => {
      const server = await serve();
      const file = join(mkdtempSync(join(tmpdir(), 'fenbs-token-')), 'token');
      writeFileSync(file, 'file-token-5678\n', { mode: 0o600 });
      const reply = await ask(['--url', server.url.href, '--token-file', file]);
      expect(reply.result).toEqual(okText('q'));
      expect(server.requests[0]!.headers.authorization).toBe('Bearer file-token-5678');
    });
  });

  describe('header injection and header size', () => {
    const evil = 'evil\r\nX-Injected: yes';
    const sentinel = `=?base64?${Buffer.from(evil, 'utf8').toString('base64')}?=`;

    // 2026-07-28 Streamable HTTP §Value Encoding: control characters force the Base64 sentinel.
    it('sends a tool name with CR/LF sentinel-encoded in Mcp-Name, and no injected header arrives', async () => {
      const server = await serve();
      const spawned = bridge(['--url', server.url.href]);
      spawned.send(call('modern', evil, { _meta: MODERN_META }));
      expect((await spawned.reply('modern')).result).toEqual(okText(evil));
      const [request] = server.requests;
      expect(request!.headers['mcp-name']).toBe(sentinel);
      expect(request!.headers['x-injected']).toBeUndefined();
      expect(request!.rawHeaders.filter((h) => /injected/i.test(h))).toEqual([]);
    });

    it('never lets a CR/LF tool name of a 2025 request become a header either', async () => {
      const server = await serve();
      const spawned = bridge(['--url', server.url.href]);
      spawned.send(call('legacy-evil', evil));
      expect((await spawned.reply('legacy-evil')).result).toEqual(okText(evil));
      expect(server.requests.every((r) => r.headers['x-injected'] === undefined)).toBe(true);
    });

    it('answers a call whose headers exceed the server limit (a real 431) and serves the next one', async () => {
      const server = await serve();
      const spawned = bridge(['--url', server.url.href]);
      spawned.send(call('huge-name', 'n'.repeat(20_000), { _meta: MODERN_META }));
      const reply = await spawned.reply('huge-name');
      expect(reply.error.data.bridgeCode).toMatch(/^REMOTE_/);
      spawned.send(call('ok'));
      expect((await spawned.reply('ok')).result).toEqual(okText('ok'));
      expect(stdoutProblems(spawned.lines, ['huge-name', 'ok'])).toEqual([]);
    });
  });
}
