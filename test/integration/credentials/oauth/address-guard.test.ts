// OAuth discovery as a probe of the user's network: a server on loopback names metadata and
// authorization servers on private, link-local, unique-local and cloud-metadata addresses.

import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { addressClassOf } from '../../../../src/core/address-class.js';
import { createAddressGuard } from '../../../../src/credentials/oauth/address-guard.js';
import { createOAuthHttp } from '../../../../src/credentials/oauth/http.js';
import { createDispatcher } from '../../../../src/http/dispatcher.js';
import { startScriptedAuthorization } from '../../../helpers/oauth-servers.js';
import { startInProcessBridge } from '../../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../../helpers/spawn-bridge.js';

const OPENER_RECORDER = fileURLToPath(new URL('../../../helpers/opener-recorder.mjs', import.meta.url));

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback MCP server that wants a sign-in: its challenge names `resourceMetadata`, or its own metadata lists `authorizationServer`. */
async function serverNaming(named: { resourceMetadata?: string; authorizationServer?: string }): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(`${req.method} ${req.url}`);
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resource: `${origin}/mcp`, authorization_servers: [named.authorizationServer] }));
      return;
    }
    const metadata = named.resourceMetadata ?? `${origin}/.well-known/oauth-protected-resource/mcp`;
    res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${metadata}"`, 'content-type': 'application/json' }).end('{"error":"invalid_token"}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, paths };
}

async function firstAnswer(url: string, args: string[] = []): Promise<{ error: { message: string; data: { hint?: string } } }> {
  const bridge = startInProcessBridge(['--url', url, '--connect-timeout', '20000', ...args], {});
  cleanups.push(() => bridge.kill());
  bridge.send(initializeRequest('init'));
  return bridge.reply('init', 30_000);
}

describe('OAuth discovery that names an address on the user’s own network', () => {
  it.each([
    [
      'resource metadata on the cloud metadata service',
      { resourceMetadata: 'https://169.254.169.254/latest/meta-data/iam' },
      /169\.254\.169\.254: it is a cloud metadata service's address, which no OAuth request may reach/,
    ],
    [
      'resource metadata on a private address',
      { resourceMetadata: 'https://10.1.2.3/.well-known/oauth-protected-resource' },
      /10\.1\.2\.3: it is a private network address, and the MCP server is not on one; --oauth-allow-private-network allows it/,
    ],
    ['an authorization server on a unique-local address', { authorizationServer: 'https://[fd00::1]' }, /fd00::1: it is a unique-local IPv6 address/],
    ['an authorization server on an IPv4-mapped metadata address', { authorizationServer: 'https://[::ffff:a9fe:a9fe]' }, /cloud metadata service's address/],
  ])('refuses %s before connecting, naming the class and the option', async (_, named, message) => {
    const { url } = await serverNaming(named);
    const started = performance.now();
    const reply = await firstAnswer(url);
    expect(reply.error.message).toMatch(message);
    // No connection was tried: a 20 s connect timeout never ran.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('with --oauth-allow-private-network, tries a private authorization server, but never the cloud metadata service', async () => {
    const metadata = await serverNaming({ resourceMetadata: 'https://169.254.169.254/x' });
    expect((await firstAnswer(metadata.url, ['--oauth-allow-private-network'])).error.message).toMatch(/cloud metadata/);
    const privateServer = await serverNaming({ resourceMetadata: 'https://[fd00::1]:9/x' });
    const reply = await firstAnswer(privateServer.url, ['--oauth-allow-private-network', '--connect-timeout', '1000']);
    expect(reply.error.message).not.toMatch(/refused an OAuth request/);
  });
});

describe('authorization server metadata whose endpoints are on the user’s own network', () => {
  // RFC 8414 §6: the metadata names where secrets and the user's browser go. Checked as the
  // document is accepted, so nothing is registered and no browser opens for a sign-in whose code
  // could only be sent to the metadata service or a host on the user's network.
  it.each([
    [
      'token_endpoint',
      { token_endpoint: 'https://169.254.169.254/token' },
      /the authorization server's token_endpoint at 169\.254\.169\.254: it is a cloud metadata/,
    ],
    [
      'revocation_endpoint',
      { revocation_endpoint: 'https://10.1.2.3/revoke' },
      /the authorization server's revocation_endpoint at 10\.1\.2\.3: it is a private network address, and the MCP server is not on one; --oauth-allow-private-network allows it/,
    ],
    [
      'authorization_endpoint',
      { authorization_endpoint: 'https://[fd00::1]/authorize' },
      /to open the sign-in page \(authorization_endpoint\) at fd00::1: it is a unique-local/,
    ],
    [
      'authorization_endpoint',
      { authorization_endpoint: 'https://[::ffff:a9fe:a9fe]/authorize' },
      /sign-in page \(authorization_endpoint\) at ::ffff:a9fe:a9fe: it is a cloud metadata/,
    ],
  ])('refuses metadata whose %s is there as it is accepted: no client registered, no browser opened, one answer', async (_, endpoints, message) => {
    const as = await startScriptedAuthorization(() => endpoints);
    cleanups.push(() => as.close());
    const home = mkdtempSync(join(tmpdir(), 'fenbs-guard-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
    const record = join(home, 'opened.jsonl');
    const bridge = startInProcessBridge(['--url', as.mcpUrl, '--oauth-login-timeout', '2000'], {
      FENBS_MCP_HOME: join(home, 'state'),
      BROWSER: `"${process.execPath}" "${OPENER_RECORDER}"`,
      OPENER_RECORD: record,
    });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 20_000);
    expect(reply.error).toMatchObject({ data: { bridgeCode: 'AUTH_REQUIRED' } });
    expect(reply.error.message).toMatch(message);
    bridge.end();
    await bridge.exited;
    expect(bridge.lines.filter((line) => (JSON.parse(line) as { id?: unknown }).id === 'init')).toHaveLength(1);
    expect(as.requests).not.toContain('POST /register');
    expect(existsSync(record) ? readFileSync(record, 'utf8') : '').toBe('');
  });
});

/** An address of this machine off loopback (its network interface: a private, unique-local or documentation address), or undefined. */
const interfaceAddress = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry !== undefined && !entry.internal && !['link-local', 'loopback', undefined].includes(addressClassOf(entry.address)))?.address;

const hostOf = (address: string) => (address.includes(':') ? `[${address}]` : address);

/** A server on `address` that answers with `answer(origin, path)` and counts the connections made to it; each answer closes its connection. */
async function countingServer(
  address: string,
  answer: (origin: string, path: string) => { status: number; headers?: Record<string, string>; body: unknown },
  port = 0,
) {
  let connections = 0;
  const server = createServer((req, res) => {
    const { status, headers = {}, body } = answer(origin, req.url ?? '/');
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...headers }).end(JSON.stringify(body));
  });
  server.on('connection', () => connections++);
  server.listen(port, address);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  const origin = `http://${hostOf(address)}:${bound}`;
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { origin, port: bound, connections: () => connections };
}

describe.skipIf(interfaceAddress === undefined)('a name the OAuth dispatcher resolves when it connects', () => {
  // RFC 9728 §7.7: a name is checked where it resolves at connect time, by the OAuth dispatcher's
  // own lookup, so a name that answers an address of the user's network is refused like the address.
  it('refuses an authorization server named localhost when the MCP server is on this machine’s network address, and never connects to it', async () => {
    const as = await countingServer('127.0.0.1', () => ({ status: 404, body: {} }));
    const mcp = await countingServer(interfaceAddress!, (origin, path) =>
      path === '/.well-known/oauth-protected-resource/mcp'
        ? { status: 200, body: { resource: `${origin}/mcp`, authorization_servers: [`http://localhost:${as.port}`] } }
        : { status: 401, headers: { 'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` }, body: {} },
    );
    const started = performance.now();
    const reply = await firstAnswer(`${mcp.origin}/mcp`, ['--allow-http']);
    expect(reply.error.message).toMatch(
      /refused an OAuth request to localhost \((127\.0\.0\.1|::1)\): it is a loopback address \(this machine\), and the MCP server is not on one; --oauth-allow-private-network allows it/,
    );
    expect(as.connections()).toBe(0);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('resolves a name again for each connection, so one that rebinds to loopback after an address it may reach is refused there', async () => {
    // The first answer for as.test is this machine's network address, the class the MCP server is
    // in; the next is 127.0.0.1, on the same port: the second request must not reach it.
    const first = await countingServer(interfaceAddress!, () => ({ status: 200, body: { first: true } }));
    const loopback = await countingServer('127.0.0.1', () => ({ status: 200, body: { loopback: true } }), first.port);
    const answers = [[interfaceAddress!], ['127.0.0.1']];
    const resolve = (host: string) =>
      Promise.resolve(host === 'as.test' ? (answers.shift() ?? ['127.0.0.1']).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })) : []);
    const guard = createAddressGuard(new URL(`https://${hostOf(interfaceAddress!)}/mcp`), false, resolve);
    const dispatcher = createDispatcher({ connectTimeoutMs: 2_000, env: {}, lookup: guard.lookup });
    cleanups.push(() => dispatcher.destroy());
    const http = createOAuthHttp(dispatcher, true, guard);
    const url = `http://as.test:${first.port}/.well-known/oauth-authorization-server`;
    expect(await (await http.fetch(url, {})).json()).toEqual({ first: true });
    await expect(http.fetch(url, {})).rejects.toThrow(/refused an OAuth request to as\.test \(127\.0\.0\.1\): it is a loopback address/);
    expect(first.connections()).toBe(1);
    expect(loopback.connections()).toBe(0);
  });
});
