// End-to-end, enterprise TLS: client certificates through the built bin, and --use-system-ca with a temporary system store.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { beforeAll, describe, expect, it } from 'vitest';
import { spawnedMode } from '../helpers/bridge-mode.js';
import { createClientCertificates, createTestCertificates, serversForFile, type McpServer, type TestCertificates } from '../helpers/hardening-servers.js';
import { defineClientCertificateSuite } from '../suites/client-certificates.js';

defineClientCertificateSuite(spawnedMode);

const call = { jsonrpc: '2.0', id: 'q', method: 'tools/call', params: { name: 'q', arguments: {} } };
// tls.getCACertificates came with the system store API (Node 22.15, 23.10): what the bridge checks for.
const hasSystemStore = typeof (tls as { getCACertificates?: unknown }).getCACertificates === 'function';

describe('the start-up checks of the built bin', () => {
  it('exits 2 on a wrong passphrase, naming the key file, with the passphrase in no output', async () => {
    const certs = createTestCertificates();
    const client = createClientCertificates(certs);
    const bridge = spawnedMode.start(['--url', 'https://127.0.0.1:1/mcp', '--client-cert', client.certFile, '--client-key', client.encryptedKeyFile], {
      FENBS_MCP_CLIENT_KEY_PASSPHRASE: 'a wrong passphrase',
    });
    expect(await bridge.exitCode).toBe(2);
    expect(bridge.stderr()).toContain(`--client-key ${client.encryptedKeyFile} could not be decrypted with FENBS_MCP_CLIENT_KEY_PASSPHRASE: wrong passphrase`);
    expect(bridge.stderr()).not.toContain('a wrong passphrase');
  });
});

// OpenSSL, which Node's system store reads on Linux, takes its store from SSL_CERT_FILE and
// SSL_CERT_DIR: a temporary file stands in for the machine's store, which stays untouched.
describe.runIf(process.platform === 'linux')('--use-system-ca', () => {
  const { serve, track } = serversForFile();
  let certs: TestCertificates;
  let server: McpServer;
  let store: string;
  beforeAll(async () => {
    certs = createTestCertificates();
    server = await serve({ tls: { key: certs.key, cert: certs.cert } });
    store = join(mkdtempSync(join(tmpdir(), 'fenbs-store-')), 'ca-certificates.crt');
  });
  const ask = async (env: Record<string, string>): Promise<any> => {
    const bridge = spawnedMode.start(['--url', server.url.href, '--use-system-ca'], env);
    track(() => bridge.kill());
    bridge.send(call);
    return bridge.reply('q', 15_000);
  };

  it.runIf(hasSystemStore)('does not trust a private CA before it is in the system store, and trusts it once it is', async () => {
    writeFileSync(store, readFileSync(certs.otherCaFile, 'utf8'));
    const before = await ask({ SSL_CERT_FILE: store, SSL_CERT_DIR: join(store, 'none') });
    expect(before.error.data.bridgeCode).toBe('REMOTE_TLS');
    writeFileSync(store, readFileSync(certs.caFile, 'utf8'));
    const after = await ask({ SSL_CERT_FILE: store, SSL_CERT_DIR: join(store, 'none') });
    expect(after.result).toEqual({ content: [{ type: 'text', text: 'ok q' }] });
  });

  it.runIf(hasSystemStore)('without --use-system-ca, does not trust a CA that is only in the system store', async () => {
    writeFileSync(store, readFileSync(certs.caFile, 'utf8'));
    const bridge = spawnedMode.start(['--url', server.url.href], { SSL_CERT_FILE: store });
    track(() => bridge.kill());
    bridge.send(call);
    expect((await bridge.reply('q', 15_000)).error.data.bridgeCode).toBe('REMOTE_TLS');
  });

  it.runIf(!hasSystemStore)('is refused with exit 2 on a Node without the system store, naming the version it needs', async () => {
    const bridge = spawnedMode.start(['--url', 'https://127.0.0.1:1/mcp', '--use-system-ca']);
    expect(await bridge.exitCode).toBe(2);
    expect(bridge.stderr()).toContain(`--use-system-ca needs Node 22.15 or newer (23.10 or newer on the 23 line, or any 24+); this is Node ${process.version}`);
  });
});
