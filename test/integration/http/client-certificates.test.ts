// In-process, TLS client authentication against node:https with requestCert, and the start-up checks of the certificate and key files.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createConfig, type RawOptions } from '../../../src/config/config.js';
import { UsageError } from '../../../src/core/errors.js';
import { inProcessMode } from '../../helpers/bridge-mode.js';
import { createClientCertificates, createTestCertificates } from '../../helpers/hardening-servers.js';
import { defineClientCertificateSuite } from '../../suites/client-certificates.js';

defineClientCertificateSuite(inProcessMode);

describe('the --client-cert and --client-key checks at start', () => {
  const certs = createTestCertificates();
  const client = createClientCertificates(certs);
  const usage = (options: RawOptions, env: Record<string, string> = {}): string => {
    try {
      createConfig({ options: { url: 'https://127.0.0.1/mcp', ...options }, env, readTextFile: (path) => readFileSync(path, 'utf8') });
    } catch (error) {
      if (error instanceof UsageError) return error.message;
      throw error;
    }
    throw new Error('no UsageError');
  };

  it('refuses a wrong passphrase, naming the key file and the variable, never the passphrase', () => {
    const message = usage({ clientCert: client.certFile, clientKey: client.encryptedKeyFile }, { FENBS_MCP_CLIENT_KEY_PASSPHRASE: 'not the passphrase' });
    expect(message).toContain(`--client-key ${client.encryptedKeyFile} could not be decrypted with FENBS_MCP_CLIENT_KEY_PASSPHRASE: wrong passphrase`);
    expect(message).not.toContain('not the passphrase');
  });

  it('refuses an encrypted key when FENBS_MCP_CLIENT_KEY_PASSPHRASE is not set', () => {
    expect(usage({ clientCert: client.certFile, clientKey: client.encryptedKeyFile })).toBe(
      `--client-key ${client.encryptedKeyFile} is encrypted and FENBS_MCP_CLIENT_KEY_PASSPHRASE is not set`,
    );
  });

  it('refuses a key that does not match the certificate, naming both files', () => {
    expect(usage({ clientCert: client.certFile, clientKey: client.otherKeyFile })).toMatch(
      new RegExp(`^--client-key ${client.otherKeyFile} does not match the certificate in --client-cert ${client.certFile} \\(CN=fenbs-mcp test client\\)$`),
    );
  });

  it('refuses files that hold no PEM certificate or key, saying which is which when they are swapped', () => {
    expect(usage({ clientCert: client.keyFile, clientKey: client.certFile })).toBe(
      `--client-cert ${client.keyFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----); it looks like a private key: give that to --client-key`,
    );
    expect(usage({ clientCert: client.certFile, clientKey: client.certFile })).toBe(
      `--client-key ${client.certFile} holds no PEM private key (-----BEGIN PRIVATE KEY-----); it holds a certificate: give that to --client-cert`,
    );
  });

  it('refuses an unreadable file, naming it', () => {
    expect(usage({ clientCert: `${certs.dir}/missing.pem`, clientKey: client.keyFile })).toMatch(
      new RegExp(`^cannot read --client-cert ${certs.dir}/missing.pem: ENOENT`),
    );
  });

  it('refuses --client-cert without --client-key and the other way round', () => {
    expect(usage({ clientCert: client.certFile })).toMatch(/^--client-cert needs --client-key too/);
    expect(usage({ clientKey: client.keyFile })).toMatch(/^--client-key needs --client-cert too/);
  });

  it('keeps the whole certificate file (a chain is sent as given), the subject and the expiry', () => {
    const config = createConfig({
      options: { url: 'https://127.0.0.1/mcp', clientCert: client.certFile, clientKey: client.keyFile },
      env: {},
      readTextFile: (path) => readFileSync(path, 'utf8'),
    });
    expect(config.clientCertificate).toMatchObject({ cert: readFileSync(client.certFile, 'utf8'), subject: 'CN=fenbs-mcp test client', passphrase: undefined });
    expect(config.clientCertificate!.validTo.getTime()).toBeGreaterThan(0);
  });
});

describe('doctor with a client certificate', () => {
  it('passes against a server that demands one, showing its subject and expiry and the CA store', async () => {
    const { runDoctor } = await import('../../../src/doctor/doctor.js');
    const { startMcpServer } = await import('../../helpers/hardening-servers.js');
    const certs = createTestCertificates();
    const client = createClientCertificates(certs);
    const server = await startMcpServer({
      tls: { key: certs.key, cert: certs.cert, ca: readFileSync(certs.caFile, 'utf8'), requestCert: true, rejectUnauthorized: true },
    });
    try {
      const config = createConfig({
        options: { url: server.url.href, caFile: certs.caFile, clientCert: client.certFile, clientKey: client.keyFile },
        env: {},
        readTextFile: (path) => readFileSync(path, 'utf8'),
      });
      const report = await runDoctor(config, {});
      const check = (name: string) => report.checks.find((c) => c.name === name);
      expect(check('client cert')).toMatchObject({ ok: true, detail: expect.stringMatching(/^CN=fenbs-mcp test client, valid until \d{4}-/) });
      expect(check('tls')!.detail).toMatch(/; CA store: Node's bundled roots \+ --ca-file$/);
      expect(report.ok).toBe(true);
    } finally {
      await server.close();
    }
  });
});
