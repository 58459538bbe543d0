// Classifies a failed exchange by err.code (never by class) into the BridgeError the request is answered with.

import { BridgeError, isBridgeError } from '../core/errors.js';
import { CANCELLED, type AbortSource } from '../core/abort.js';
import { redactUserinfo } from './dispatcher.js';

export interface FailureContext {
  url: URL;
  proxy?: string | undefined;
  /** The --client-cert file the connection presented, if any. */
  clientCertificate?: string | undefined;
}

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|ERR_OSSL_|HOSTNAME_MISMATCH)/;

/**
 * Alerts a server sends about the client's certificate (RFC 8446 §6.2; RFC 5246 §7.2.2): the
 * client reports its own verdicts on the server's certificate with local codes (CERT_*,
 * UNABLE_TO_*), so a received one of these is about the certificate the bridge sent, or did not.
 */
/**
 * OpenSSL's record-layer errors when the peer answers the ClientHello with something that is not a
 * TLS record: an HTTP/1.1 status line read as a record header (RFC 8446 §5.1) gives a wrong version
 * or an impossible length. The port speaks plain HTTP.
 */
const PLAIN_TEXT_ANSWER = /^ERR_SSL_(?:WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG)$/;

/** The same https URL as http, and what to say about it, when a TLS failure's `code` means the port answered in plain HTTP; undefined otherwise. */
export function plainHttpAnswer(code: string | undefined, url: URL): { message: string; hint: string } | undefined {
  if (code === undefined || !PLAIN_TEXT_ANSWER.test(code) || url.protocol !== 'https:') return undefined;
  // Only the origin and path: the query may carry a secret, and the user knows the rest.
  const plain = `http://${url.host}${url.pathname}`;
  return {
    message: `${url.host} answered in plain HTTP, not TLS: the port speaks http://, not https:// (${code})`,
    hint: `if the server is meant to be plain HTTP (this machine, a trusted network), use --url ${plain}; otherwise check the port in --url`,
  };
}

const CLIENT_CERTIFICATE_REQUIRED = /^ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED$/;
const CLIENT_CERTIFICATE_REFUSED =
  /^ERR_SSL_(?:TLSV1_ALERT_UNKNOWN_CA|SSLV3_ALERT_BAD_CERTIFICATE|SSLV3_ALERT_UNSUPPORTED_CERTIFICATE|SSLV3_ALERT_CERTIFICATE_REVOKED|SSLV3_ALERT_CERTIFICATE_EXPIRED|SSLV3_ALERT_CERTIFICATE_UNKNOWN|TLSV1_ALERT_ACCESS_DENIED)$/;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Walks `cause` chains: undici wraps socket and TLS errors. */
function innermost(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5; depth++) {
    const cause = (current as { cause?: unknown } | null)?.cause;
    if (cause === undefined || cause === null) break;
    current = cause;
  }
  return current;
}

/**
 * Maps a failure to a BridgeError by `err.code`, never by class. An aborted signal's reason wins:
 * the deadline, a cancel or shutdown already said why.
 */
export function toBridgeError(error: unknown, signal: AbortSource | undefined, context: FailureContext): BridgeError {
  // A request the client cancelled gets no answer at all; this one only ends its own task quietly.
  if (signal?.aborted === true && signal.reason === CANCELLED) return new BridgeError('INTERNAL', 'cancelled');
  if (isBridgeError(error)) return error;
  // A wrapper whose cause is already classified (a refused POST, an abort carrying the reason).
  if (error instanceof Error && isBridgeError(error.cause)) return error.cause;
  if (signal?.aborted === true && isBridgeError(signal.reason)) return signal.reason;
  const inner = innermost(error);
  const code = codeOf(inner) ?? codeOf(error);
  // OpenSSL's messages end with a line break, which a terminal line would show as \x0a.
  const detail = ((inner instanceof Error ? inner.message : String(inner)) || String(error)).trim();
  const where = context.url.host;
  const proxyNote = context.proxy === undefined ? '' : ` (through the proxy ${redactUserinfo(context.proxy)})`;
  const base = { cause: code ?? detail };

  if (code !== undefined && CLIENT_CERTIFICATE_REQUIRED.test(code)) {
    return new BridgeError(
      'REMOTE_TLS',
      `${where} requires TLS client authentication: it asked for a client certificate and got none (TLS alert certificate_required)`,
      {
        ...base,
        hint: "the server requires a TLS client certificate: pass --client-cert <pem> and --client-key <pem> (an encrypted key's passphrase in FENBS_MCP_CLIENT_KEY_PASSPHRASE)",
      },
    );
  }
  if (code !== undefined && CLIENT_CERTIFICATE_REFUSED.test(code)) {
    return new BridgeError('REMOTE_TLS', `${where} refused the TLS client certificate: TLS client authentication failed (${code})`, {
      ...base,
      hint: 'the server does not accept the certificate in --client-cert: use one issued by a CA the server trusts, not expired, or ask its operator which it accepts',
    });
  }
  const plain = plainHttpAnswer(code, context.url);
  if (plain !== undefined) return new BridgeError('REMOTE_TLS', plain.message, { ...base, neverSent: true, hint: plain.hint });
  if (code !== undefined && TLS_CODES.test(code)) {
    return new BridgeError('REMOTE_TLS', `TLS with ${where} failed: ${detail}`, {
      ...base,
      hint: 'the server certificate is not trusted: pass --ca-file <pem> with your CA (or set NODE_EXTRA_CA_CERTS), or check the host name in --url',
    });
  }
  if (context.proxy !== undefined && /\(407\)/.test(detail)) {
    return new BridgeError('PROXY_FAILED', `the proxy ${redactUserinfo(context.proxy)} wants credentials (407 Proxy Authentication Required)`, {
      ...base,
      hint: 'put the proxy user and password in the proxy URL: HTTPS_PROXY=http://user:password@proxy:port (or ask for a host to be added to NO_PROXY)',
    });
  }
  if (/proxy/i.test(detail) && code === 'UND_ERR_ABORTED') {
    return new BridgeError('PROXY_FAILED', `the proxy refused the tunnel to ${where}: ${detail}`, {
      ...base,
      hint: 'check HTTPS_PROXY / HTTP_PROXY (and credentials), or add the host to NO_PROXY',
    });
  }
  switch (code) {
    case 'EMFILE':
    case 'ENFILE':
      // Out of file descriptors while opening the socket: nothing was sent, so a retry is safe.
      return new BridgeError('REMOTE_UNREACHABLE', `could not open a connection to ${where}: too many open files`, {
        ...base,
        neverSent: true,
        hint: 'too many connections at once: send fewer requests in parallel, or raise the open-files limit (ulimit -n)',
      });
    case 'ECONNREFUSED':
      // Through a proxy, the bridge connects to the proxy only: a refusal is the proxy's.
      if (context.proxy !== undefined) {
        return new BridgeError('PROXY_FAILED', `the proxy ${redactUserinfo(context.proxy)} is unreachable: nothing is listening there`, {
          ...base,
          neverSent: true,
          hint: 'check HTTPS_PROXY / HTTP_PROXY (host and port), or add the host to NO_PROXY if it needs no proxy',
        });
      }
      return new BridgeError('REMOTE_UNREACHABLE', `nothing is listening at ${where}`, {
        ...base,
        neverSent: true,
        hint: `nothing is listening at ${where}: check --url (host and port), or start the server`,
      });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return new BridgeError('REMOTE_UNREACHABLE', `the host name ${where} could not be resolved`, {
        ...base,
        neverSent: true,
        hint: 'check the host name in --url, your DNS, or set HTTPS_PROXY if this network needs a proxy',
      });
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
    case 'ENETUNREACH':
    case 'EHOSTUNREACH':
      return new BridgeError('REMOTE_UNREACHABLE', `could not connect to ${where}${proxyNote}: ${detail}`, {
        ...base,
        neverSent: true,
        hint: 'the network path is blocked or slow: check firewalls and proxies (HTTPS_PROXY), or raise --connect-timeout',
      });
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'ERR_STREAM_PREMATURE_CLOSE':
      return new BridgeError('REMOTE_CONNECTION_LOST', `the connection to ${where} broke: ${detail}`, {
        ...base,
        // A server that refuses a client certificate may just close the connection, with no TLS
        // alert to say so (node:https does, with rejectUnauthorized): the likeliest cause is named.
        hint:
          context.clientCertificate === undefined
            ? 'the server or a proxy closed the connection; retry, and check the server logs'
            : `the server or a proxy closed the connection; if the server checks TLS client certificates, it may have refused the one in --client-cert ${context.clientCertificate} (TLS client authentication): check it is issued by a CA the server trusts`,
      });
    case 'Z_DATA_ERROR':
    case 'Z_BUF_ERROR':
    case 'ERR_PADDING_1':
    case 'ERR__ERROR_FORMAT_PADDING_1':
      return new BridgeError('REMOTE_BAD_REPLY', `the reply from ${where} could not be decompressed: ${detail}`, base);
    default:
      return new BridgeError('REMOTE_CONNECTION_LOST', `the exchange with ${where} failed: ${detail}`, base);
  }
}
