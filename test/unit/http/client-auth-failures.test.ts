// TLS alerts about the client's certificate, and a close after one was sent, become errors that name TLS client authentication.

import { describe, expect, it } from 'vitest';
import { toBridgeError } from '../../../src/http/failures.js';

const url = new URL('https://mcp.example/mcp');
/** undici's "other side closed", with the alert the connector kept as its cause. */
const closedAfter = (alertCode: string) =>
  Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', cause: Object.assign(new Error('ssl alert'), { code: alertCode }) });

describe('toBridgeError for TLS client authentication', () => {
  it('names client certificates and the options when the server sent certificate_required', () => {
    const error = toBridgeError(closedAfter('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'), undefined, { url });
    expect(error.code).toBe('REMOTE_TLS');
    expect(error.message).toBe(
      'mcp.example requires TLS client authentication: it asked for a client certificate and got none (TLS alert certificate_required)',
    );
    expect(error.context.hint).toMatch(/^the server requires a TLS client certificate: pass --client-cert <pem> and --client-key <pem>/);
  });

  it.each(['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED'])(
    'says the server refused the client certificate on %s',
    (code) => {
      const error = toBridgeError(closedAfter(code), undefined, { url, clientCertificate: '/c.pem' });
      expect(error.code).toBe('REMOTE_TLS');
      expect(error.message).toBe(`mcp.example refused the TLS client certificate: TLS client authentication failed (${code})`);
    },
  );

  it('keeps the plain connection-lost hint when no client certificate was sent', () => {
    const error = toBridgeError(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }), undefined, { url });
    expect(error.code).toBe('REMOTE_CONNECTION_LOST');
    expect(error.context.hint).not.toContain('client');
  });
});
