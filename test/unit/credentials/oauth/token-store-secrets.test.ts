import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SecretStore } from '../../../../src/credentials/oauth/secret-store.js';
import { TokenStore, type CacheContents } from '../../../../src/credentials/oauth/token-store.js';

const SERVER = new URL('https://mcp.example.com/mcp');
const ISSUER = 'https://auth.example.com/';

/** A SecretStore in memory that counts its calls. */
function memoryStore(): SecretStore & { kept: Map<string, string>; calls: string[] } {
  const kept = new Map<string, string>();
  const calls: string[] = [];
  return {
    kept,
    calls,
    description: 'a test store',
    get: (key) => (calls.push('get'), kept.get(key)),
    set: (key, secret) => void (calls.push('set'), kept.set(key, secret)),
    delete: (key) => (calls.push('delete'), kept.delete(key)),
  };
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-token-store-'));
  dirs.push(dir);
  return dir;
}

const contents: CacheContents = {
  server: SERVER.href,
  issuer: ISSUER,
  issuers: {
    [ISSUER]: {
      resource: SERVER.href,
      client: { kind: 'registered', clientId: 'client-1', clientSecret: 'registered-client-secret', redirectUri: 'http://127.0.0.1:4567/callback' },
      tokens: { accessToken: 'access-token-value', refreshToken: 'refresh-token-value', expiresAt: 2_000, obtainedAt: 1_000, scope: 'mcp:read' },
    },
  },
  lastSignIn: { at: 1_000, outcome: 'signed-in', stepUp: false },
};

describe('TokenStore with a SecretStore', () => {
  it('keeps tokens and the registered client secret in the SecretStore, and only what is not secret in the file', () => {
    const secrets = memoryStore();
    const store = new TokenStore(folder(), SERVER, () => undefined, secrets);
    store.write(contents);
    const file = readFileSync(store.file, 'utf8');
    for (const secret of ['access-token-value', 'refresh-token-value', 'registered-client-secret']) expect(file).not.toContain(secret);
    expect(JSON.parse(file)).toMatchObject({
      issuer: ISSUER,
      issuers: { [ISSUER]: { client: { clientId: 'client-1' }, tokens: { expiresAt: 2_000, obtainedAt: 1_000, scope: 'mcp:read' } } },
      lastSignIn: { outcome: 'signed-in' },
    });
    expect([...secrets.kept.keys()]).toEqual([store.key]);
    expect(store.read()).toEqual(contents);
  });

  it('calls the SecretStore only when a secret changed: a sign-in record alone writes the file only', () => {
    const secrets = memoryStore();
    const store = new TokenStore(folder(), SERVER, () => undefined, secrets);
    store.write(contents);
    secrets.calls.length = 0;
    store.recordSignIn({ at: 5_000, outcome: 'started', stepUp: false });
    expect(secrets.calls).toEqual(['get']);
  });

  it('moves tokens a file kept from before into the SecretStore at the next write', () => {
    const dir = folder();
    new TokenStore(dir, SERVER).write(contents);
    const secrets = memoryStore();
    const store = new TokenStore(dir, SERVER, () => undefined, secrets);
    expect(store.read()).toEqual(contents);
    store.recordSignIn({ at: 5_000, outcome: 'signed-in', stepUp: false });
    expect(readFileSync(store.file, 'utf8')).not.toContain('access-token-value');
    expect(store.read().issuers[ISSUER]?.tokens?.accessToken).toBe('access-token-value');
  });

  it('forgets the entry when no secret is left, and on remove()', () => {
    const secrets = memoryStore();
    const store = new TokenStore(folder(), SERVER, () => undefined, secrets);
    store.write(contents);
    store.update(ISSUER, SERVER.href, (entry) => ({ ...entry, client: { kind: 'registered', clientId: 'client-1' }, tokens: undefined }));
    expect(secrets.kept.size).toBe(0);
    store.write(contents);
    expect(store.remove()).toBe(true);
    expect(secrets.kept.size).toBe(0);
    expect(store.remove()).toBe(false);
  });

  it('reads as signed out, and says why once, when the SecretStore fails', () => {
    const told: string[] = [];
    const secrets = memoryStore();
    const store = new TokenStore(folder(), SERVER, (message) => told.push(message), secrets);
    store.write(contents);
    secrets.get = () => {
      throw new Error('the Secret Service (secret-tool) failed (get: it did not answer within 5000 ms)');
    };
    expect(store.read().issuers[ISSUER]?.tokens).toBeUndefined();
    store.read();
    expect(told).toEqual([
      'the OAuth tokens kept in a test store are not used: the Secret Service (secret-tool) failed (get: it did not answer within 5000 ms)',
    ]);
  });

  it('escapes every character past ASCII in what it keeps, so each platform gives the same bytes back', () => {
    const secrets = memoryStore();
    const store = new TokenStore(folder(), SERVER, () => undefined, secrets);
    const wide = {
      ...contents,
      issuers: { [ISSUER]: { ...contents.issuers[ISSUER]!, client: { kind: 'registered' as const, clientId: 'c', clientSecret: 'sécret€' } } },
    };
    store.write(wide);
    expect([...secrets.kept.values()][0]).toMatch(/^[\x20-\x7e]*$/);
    expect(store.read()).toEqual(wide);
  });
});
