// Checks a --client-cert / --client-key pair once at start (pure: the PEM text is handed in), so a wrong file is a usage mistake, not a TLS failure on every request.

import { createRequire } from 'node:module';
import type * as Crypto from 'node:crypto';
import { UsageError } from '../core/errors.js';

/** The variable an encrypted --client-key's passphrase is read from; never an option, so it stays out of argv and process lists. */
export const CLIENT_KEY_PASSPHRASE_ENV = 'FENBS_MCP_CLIENT_KEY_PASSPHRASE';

/** A checked client certificate, ready for the TLS connect options of the endpoint's origin. */
export interface ClientCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  /** The whole PEM text of --client-cert: a chain is sent as given (RFC 8446 §4.4.2, leaf first). */
  readonly cert: string;
  readonly key: string;
  readonly passphrase: string | undefined;
  /** The leaf's subject and expiry, for doctor. */
  readonly subject: string;
  readonly validTo: Date;
}

// node:crypto is loaded only when a client certificate is given, not at every start.
const requireBuiltin = createRequire(import.meta.url);

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/;
const PEM_PRIVATE_KEY = /-----BEGIN (?:(?:RSA |EC |DSA )?PRIVATE KEY|ENCRYPTED PRIVATE KEY)-----/;
// PKCS#8 `ENCRYPTED PRIVATE KEY` (RFC 5958 §3), or a traditional key with `Proc-Type: 4,ENCRYPTED` (RFC 1421 §4.6.1.1).
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/;

function opensslReason(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : (error as Error).message;
}

/**
 * Checks that `certPem` holds a parsable certificate first, that `keyPem` is a private key
 * (decrypting it with `passphrase` when it is encrypted) and that the key belongs to that first
 * certificate: the one a server checks the handshake signature against.
 */
export function checkClientCertificate(certFile: string, certPem: string, keyFile: string, keyPem: string, passphrase: string | undefined): ClientCertificate {
  const { X509Certificate, createPrivateKey } = requireBuiltin('node:crypto') as typeof Crypto;
  const fix = 'fenbs-mcp --client-cert client.pem --client-key client-key.pem';
  const leafPem = PEM_CERTIFICATE.exec(certPem)?.[0];
  if (leafPem === undefined) {
    throw new UsageError(
      `--client-cert ${certFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)${PEM_PRIVATE_KEY.test(certPem) ? '; it looks like a private key: give that to --client-key' : ''}`,
      fix,
    );
  }
  let leaf: Crypto.X509Certificate;
  try {
    leaf = new X509Certificate(leafPem);
  } catch {
    throw new UsageError(`--client-cert ${certFile}: its first PEM certificate does not parse as X.509`, fix);
  }
  if (!PEM_PRIVATE_KEY.test(keyPem)) {
    throw new UsageError(
      `--client-key ${keyFile} holds no PEM private key (-----BEGIN PRIVATE KEY-----)${PEM_CERTIFICATE.test(keyPem) ? '; it holds a certificate: give that to --client-cert' : ''}`,
      fix,
    );
  }
  const encrypted = ENCRYPTED_KEY.test(keyPem);
  if (encrypted && passphrase === undefined) {
    throw new UsageError(
      `--client-key ${keyFile} is encrypted and ${CLIENT_KEY_PASSPHRASE_ENV} is not set`,
      `${CLIENT_KEY_PASSPHRASE_ENV}=<passphrase> ${fix}`,
    );
  }
  let key: Crypto.KeyObject;
  try {
    // An unencrypted key ignores the passphrase; an empty one (a desktop config's blank) counts as none.
    key = createPrivateKey(encrypted ? { key: keyPem, format: 'pem', passphrase: passphrase ?? '' } : { key: keyPem, format: 'pem' });
  } catch (error) {
    if (encrypted) {
      // The reason OpenSSL gives (bad decrypt) is enough; the passphrase itself is never repeated.
      throw new UsageError(
        `--client-key ${keyFile} could not be decrypted with ${CLIENT_KEY_PASSPHRASE_ENV}: wrong passphrase (${opensslReason(error)})`,
        `set ${CLIENT_KEY_PASSPHRASE_ENV} to the key's passphrase`,
      );
    }
    throw new UsageError(`--client-key ${keyFile} does not parse as a private key (${opensslReason(error)})`, fix);
  }
  if (!leaf.checkPrivateKey(key)) {
    throw new UsageError(
      `--client-key ${keyFile} does not match the certificate in --client-cert ${certFile} (${leaf.subject.replace(/\n/g, ', ')})`,
      'give the key the certificate was issued for',
    );
  }
  return Object.freeze({
    certFile,
    keyFile,
    cert: certPem,
    key: keyPem,
    passphrase: encrypted ? passphrase : undefined,
    subject: leaf.subject.replace(/\n/g, ', '),
    validTo: new Date(leaf.validTo),
  });
}
