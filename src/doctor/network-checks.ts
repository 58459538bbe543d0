// doctor's network probes: a TCP connection and a TLS handshake to the server, each bounded by the connect timeout.

import { connect as connectTcp, isIP } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import type { BridgeConfig } from '../config/config.js';
import { trustedCas } from '../http/dispatcher.js';
import { plainHttpAnswer } from '../http/failures.js';

/** Whether a TCP connection to host:port opens within the timeout, with what to do when it does not. */
export function tryTcp(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; detail: string; hint: string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connectTcp({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      resolve({ ok: true, detail: `${host}:${port} in ${(performance.now() - started).toFixed(1)} ms`, hint: '' });
      socket.destroy();
    });
    socket.once('timeout', () => {
      resolve({
        ok: false,
        detail: `${host}:${port}: no answer within ${timeoutMs} ms`,
        hint: 'a firewall or proxy may block it: set HTTPS_PROXY if you need one, or raise --connect-timeout',
      });
      socket.destroy();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve({
        ok: false,
        detail: `${host}:${port}: ${error.code ?? error.message}`,
        hint: error.code === 'ECONNREFUSED' ? 'nothing is listening there: check the port in --url, or start the server' : 'check --url and your network',
      });
    });
  });
}

/** Whether a TLS handshake with host:port succeeds with the CAs the bridge trusts, and the certificate it shows. */
export function tryTls(
  host: string,
  port: number,
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ ok: boolean; detail: string; hint: string }> {
  const ca = trustedCas({ caFile: config.caFile, useSystemCa: config.useSystemCa, env });
  return new Promise((resolve) => {
    const options: ConnectionOptions = { host, port, timeout: config.connectTimeoutMs };
    if (isIP(host) === 0) options.servername = host;
    if (ca !== undefined) options.ca = ca;
    // The handshake the bridge makes: with the client certificate, so a TLS 1.2 server that demands one passes here too.
    const client = config.clientCertificate;
    if (client !== undefined) Object.assign(options, { cert: client.cert, key: client.key, passphrase: client.passphrase });
    const socket = connectTls(options);
    socket.once('secureConnect', () => {
      const cert = socket.getPeerCertificate();
      const subject = String(cert.subject?.CN ?? host);
      const issuer = String(cert.issuer?.CN ?? cert.issuer?.O ?? 'unknown');
      resolve({
        ok: true,
        detail: `${socket.getProtocol() ?? 'TLS'}; certificate for ${subject}, issued by ${issuer}, valid until ${cert.valid_to}`,
        hint: '',
      });
      socket.destroy();
    });
    socket.once('timeout', () => {
      resolve({ ok: false, detail: 'TLS handshake timed out', hint: 'raise --connect-timeout, or check proxies' });
      socket.destroy();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      const plain = plainHttpAnswer(error.code, config.url);
      resolve(
        plain !== undefined
          ? { ok: false, detail: plain.message, hint: plain.hint }
          : {
              ok: false,
              detail: `${error.code ?? 'TLS error'}: ${error.message.trim()}`,
              hint: 'the server certificate is not trusted here: pass --ca-file <your-ca.pem> (or set NODE_EXTRA_CA_CERTS); a corporate TLS proxy needs its CA',
            },
      );
    });
  });
}
