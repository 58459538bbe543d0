// OAuth discovery as a probe of the user's network: a server on loopback names metadata and
// authorization servers on private, link-local, unique-local and cloud-metadata addresses.

import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startInProcessBridge } from '../../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../../helpers/spawn-bridge.js';

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
