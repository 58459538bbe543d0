// --ca-file, --use-system-ca, --client-cert and --client-key checked at start: files read within their limits, certificates that parse, a trust store this Node has.

import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';
import { UsageError } from '../core/errors.js';
import { checkClientCertificate, CLIENT_KEY_PASSPHRASE_ENV, type ClientCertificate } from './client-certificate.js';
import { readOptionFile, type ReadTextFile } from './option-files.js';

/** Room for a full CA bundle (Mozilla's is about 250 KB) and more; a larger file is the wrong one. */
export const MAX_CA_FILE_BYTES = 16 * 1024 * 1024;
/** A client certificate chain or key file: a few kB each; a larger file is not one. */
export const MAX_CLIENT_PEM_BYTES = 1024 * 1024;

/** The TLS options as commander hands them over. */
export interface TlsRawOptions {
  caFile?: string | undefined;
  useSystemCa?: boolean | undefined;
  clientCert?: string | undefined;
  clientKey?: string | undefined;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

// node:crypto is loaded (some twenty modules) only when a --ca-file is checked, not at every start.
const requireBuiltin = createRequire(import.meta.url);

/** How many PEM blocks of `pem` hold a certificate that parses. */
function countCertificates(pem: string): number {
  const { X509Certificate } = requireBuiltin('node:crypto') as typeof Crypto;
  let loaded = 0;
  for (const [block] of pem.matchAll(PEM_CERTIFICATE)) {
    try {
      new X509Certificate(block);
      loaded++;
    } catch {
      // A damaged block; counted out, and refused below if no block is left.
    }
  }
  return loaded;
}

/**
 * Whether this Node can read the operating system's trust store: tls.getCACertificates came with
 * the system store API (Node 22.15, 23.10); before it, --use-system-ca would silently do nothing.
 */
function hasSystemStore(): boolean {
  return typeof (requireBuiltin('node:tls') as typeof Tls & { getCACertificates?: unknown }).getCACertificates === 'function';
}

/** --client-cert and --client-key: both or neither, read and checked as a pair. */
function parseClientCertificate(
  options: TlsRawOptions,
  env: Readonly<Record<string, string | undefined>>,
  readTextFile: ReadTextFile,
): ClientCertificate | undefined {
  const { clientCert, clientKey } = options;
  if (clientCert === undefined && clientKey === undefined) return undefined;
  const fix = 'fenbs-mcp --client-cert client.pem --client-key client-key.pem';
  if (clientCert === undefined || clientKey === undefined) {
    throw new UsageError(
      `${clientCert === undefined ? '--client-key' : '--client-cert'} needs ${clientCert === undefined ? '--client-cert' : '--client-key'} too: a client certificate is sent with its private key`,
      fix,
    );
  }
  const certPem = readOptionFile(readTextFile, '--client-cert', clientCert, MAX_CLIENT_PEM_BYTES, fix);
  const keyPem = readOptionFile(readTextFile, '--client-key', clientKey, MAX_CLIENT_PEM_BYTES, fix);
  // An empty variable is unset, as everywhere: a desktop config may pass a blank optional value.
  const passphrase = env[CLIENT_KEY_PASSPHRASE_ENV] === '' ? undefined : env[CLIENT_KEY_PASSPHRASE_ENV];
  return checkClientCertificate(clientCert, certPem, clientKey, keyPem, passphrase);
}

/** What the TLS options add to the config once checked. */
export interface TlsSettings {
  readonly useSystemCa: boolean;
  readonly clientCertificate: ClientCertificate | undefined;
}

/**
 * Checks the TLS options at start, in this order: --ca-file, the client certificate pair, then
 * --use-system-ca against this Node (`nodeVersion` only names it in the message).
 */
export function parseTlsOptions(
  options: TlsRawOptions,
  env: Readonly<Record<string, string | undefined>>,
  readTextFile: ReadTextFile,
  nodeVersion: string | undefined,
): TlsSettings {
  if (options.caFile !== undefined) {
    // Checked here, like --token-file: a missing or wrong file is a usage mistake (exit 2), not a
    // TLS failure on every request.
    const fix = 'fenbs-mcp --ca-file /path/to/your-ca.pem';
    const pem = readOptionFile(readTextFile, '--ca-file', options.caFile, MAX_CA_FILE_BYTES, fix);
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new UsageError(`--ca-file ${options.caFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`, fix);
    }
    if (countCertificates(pem) === 0) {
      throw new UsageError(`--ca-file ${options.caFile} holds no usable certificate: no PEM block in it parses as X.509`, fix);
    }
  }

  const clientCertificate = parseClientCertificate(options, env, readTextFile);
  const useSystemCa = options.useSystemCa === true;
  if (useSystemCa && !hasSystemStore()) {
    throw new UsageError(
      `--use-system-ca needs Node 22.15 or newer (23.10 or newer on the 23 line, or any 24+)${nodeVersion === undefined ? '' : `; this is Node ${nodeVersion}`}`,
      'upgrade Node, or export the corporate CA to a PEM file and pass --ca-file <pem>',
    );
  }
  return { useSystemCa, clientCertificate };
}
