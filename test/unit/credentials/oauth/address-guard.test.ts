import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { createAddressGuard } from '../../../../src/credentials/oauth/address-guard.js';

/** A resolver that answers from a table, each call taking the next answer for a name (DNS rebinding). */
function resolverOf(table: Record<string, string[][]>) {
  const calls = new Map<string, number>();
  return (host: string): Promise<readonly LookupAddress[]> => {
    const answers = table[host] ?? [];
    const n = calls.get(host) ?? 0;
    calls.set(host, n + 1);
    const chosen = answers[Math.min(n, answers.length - 1)] ?? [];
    return Promise.resolve(chosen.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
}

function lookupOf(guard: ReturnType<typeof createAddressGuard>, host: string): Promise<unknown> {
  return new Promise((resolve, reject) =>
    guard.lookup(host, { all: true }, (error: NodeJS.ErrnoException | null, addresses?: unknown) => (error === null ? resolve(addresses) : reject(error))),
  );
}

describe('the OAuth address guard', () => {
  it('refuses, before connecting, an address in the URL of a private, link-local, unique-local or metadata range when the MCP server is public', async () => {
    const guard = createAddressGuard(new URL('https://93.184.216.34/mcp'), false, resolverOf({}));
    for (const url of [
      'https://10.1.2.3/.well-known/oauth-authorization-server',
      'https://[fd00::1]/',
      'https://169.254.1.1/',
      'http://127.0.0.1:9/',
      'https://0x7f.1/',
    ])
      await expect(guard.checkUrl(new URL(url)), url).rejects.toThrow(/--oauth-allow-private-network allows it/);
    await expect(guard.checkUrl(new URL('https://169.254.169.254/latest/meta-data/'))).rejects.toThrow(
      /a cloud metadata service's address, which no OAuth request may reach/,
    );
    await expect(guard.checkUrl(new URL('https://8.8.8.8/'))).resolves.toBeUndefined();
    await expect(guard.checkUrl(new URL('https://login.example.com/'))).resolves.toBeUndefined();
  });

  it('allows the class the MCP server itself is in, and any private one with the option, but a metadata address never', async () => {
    const onTen = createAddressGuard(new URL('https://mcp.corp.example/mcp'), false, resolverOf({ 'mcp.corp.example': [['10.0.0.5']] }));
    await expect(onTen.checkUrl(new URL('https://10.9.9.9/'))).resolves.toBeUndefined();
    await expect(onTen.checkUrl(new URL('https://192.168.0.1/'))).resolves.toBeUndefined();
    await expect(onTen.checkUrl(new URL('https://127.0.0.1/'))).rejects.toThrow(/loopback/);
    const onLoopback = createAddressGuard(new URL('http://localhost:8080/mcp'), false, resolverOf({}));
    await expect(onLoopback.checkUrl(new URL('http://127.0.0.1:9000/'))).resolves.toBeUndefined();
    const allowed = createAddressGuard(new URL('https://93.184.216.34/mcp'), true, resolverOf({}));
    await expect(allowed.checkUrl(new URL('https://10.1.2.3/'))).resolves.toBeUndefined();
    await expect(allowed.checkUrl(new URL('https://[fd00:ec2::254]/'))).rejects.toThrow(/cloud metadata/);
    const onMetadata = createAddressGuard(new URL('https://169.254.169.254/mcp'), true, resolverOf({}));
    await expect(onMetadata.checkUrl(new URL('https://169.254.169.254/token'))).rejects.toThrow(/cloud metadata/);
  });

  it('gives no exception to a server whose name also resolves to a public address, so it cannot earn one by publishing a private address beside its own', async () => {
    const mixed = createAddressGuard(new URL('https://mcp.example/mcp'), false, resolverOf({ 'mcp.example': [['93.184.216.34', '10.0.0.5', '127.0.0.1']] }));
    for (const url of ['https://10.9.9.9/', 'https://127.0.0.1/'])
      await expect(mixed.checkUrl(new URL(url)), url).rejects.toThrow(/the MCP server is not on one/);
    // A dual-stack server inside the network keeps the exception for each of its classes.
    const inside = createAddressGuard(new URL('https://mcp.corp.example/mcp'), false, resolverOf({ 'mcp.corp.example': [['10.0.0.5', 'fd00::5']] }));
    await expect(inside.checkUrl(new URL('https://10.9.9.9/'))).resolves.toBeUndefined();
    await expect(inside.checkUrl(new URL('https://[fd00::9]/'))).resolves.toBeUndefined();
  });

  it('refuses a sign-in page on an address, localhost or a *.localhost name the rule refuses, and leaves other names to the browser', async () => {
    const guard = createAddressGuard(new URL('https://93.184.216.34/mcp'), false, resolverOf({ 'login.example.com': [['127.0.0.1']] }));
    for (const url of ['http://localhost:8080/authorize', 'http://app.localhost/authorize', 'https://192.168.1.1/authorize'])
      await expect(guard.checkPage(new URL(url)), url).rejects.toThrow(
        /refused to open the sign-in page \(authorization_endpoint\) at .*--oauth-allow-private-network allows it/,
      );
    await expect(guard.checkPage(new URL('https://login.example.com/authorize'))).resolves.toBeUndefined();
    const onLoopback = createAddressGuard(new URL('http://127.0.0.1:3000/mcp'), false, resolverOf({}));
    await expect(onLoopback.checkPage(new URL('http://localhost:8080/authorize'))).resolves.toBeUndefined();
    await expect(onLoopback.checkPage(new URL('https://169.254.169.254/authorize'))).rejects.toThrow(/cloud metadata/);
  });

  it('checks a name where it resolves at connect time, so a name that rebinds to loopback after a public answer is refused', async () => {
    const guard = createAddressGuard(
      new URL('https://93.184.216.34/mcp'),
      false,
      resolverOf({ 'as.example': [['93.184.216.35'], ['127.0.0.1']], 'meta.example': [['8.8.8.8', '169.254.169.254']] }),
    );
    await expect(lookupOf(guard, 'as.example')).resolves.toEqual([{ address: '93.184.216.35', family: 4 }]);
    await expect(lookupOf(guard, 'as.example')).rejects.toThrow(/refused an OAuth request to as\.example \(127\.0\.0\.1\): it is a loopback address/);
    await expect(lookupOf(guard, 'meta.example')).rejects.toThrow(/meta\.example \(169\.254\.169\.254\)/);
  });
});
