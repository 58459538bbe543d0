// Keeps a TLS alert the server sent after the handshake as the cause of undici's "other side closed".

import type { buildConnector as BuildConnector } from 'undici';
import { buildConnector } from './undici-parts.js';

// Under TLS 1.3 the client's handshake is over before the server checks the client certificate
// (RFC 8446 §4.4.2.4): a missing or refused one comes back as an alert (certificate_required 116,
// unknown_ca 48, bad_certificate 42, §6.2) on the first read. Node emits it as a socket error,
// then the socket ends, and undici answers the request with the SocketError of the end, dropping
// the alert. The alert is the real cause, so it is hung on that SocketError for failures.ts.
const TLS_ALERT = /^ERR_SSL_(?:TLSV1[3]?|SSLV3)_ALERT_/;

/** undici's own connector with `options`, whose sockets keep a received TLS alert as the `cause` of a later socket error. */
export function alertKeepingConnector(options: BuildConnector.BuildOptions): BuildConnector.connector {
  const connect = buildConnector(options);
  return (connectOptions, callback) =>
    connect(connectOptions, (error, socket) => {
      if (error !== null || socket === null) {
        callback(error ?? new Error('no socket'), null);
        return;
      }
      let alert: Error | undefined;
      socket.on('error', (socketError: Error & { code?: unknown; cause?: unknown }) => {
        if (typeof socketError.code === 'string' && TLS_ALERT.test(socketError.code)) alert ??= socketError;
        else if (alert !== undefined && socketError.cause === undefined) socketError.cause = alert;
      });
      callback(null, socket);
    });
}
