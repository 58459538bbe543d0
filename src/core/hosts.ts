// Which hosts are this machine (RFC 6761 §6.3, RFC 8252 §8.3), and so the scheme a URL typed without one most likely meant.

import { isIP } from 'node:net';

/** Whether the user's own `--url` names this machine (their choice: `*.localhost` counts, RFC 6761 §6.3). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * Whether a host a server chose (a sign-in page, an OAuth endpoint) surely names this machine, so
 * plain http to it stays here: an IPv4 literal in 127.0.0.0/8, `[::1]`, or the name `localhost`
 * itself. RFC 8252 §8.3 prefers literals; `*.localhost` is refused because the system resolver
 * undici asks need not map it to loopback (RFC 6761 §6.3 says only SHOULD), and then the request
 * would leave the machine in clear text. Takes a WHATWG URL hostname (lowercase, IPv4 in dotted
 * decimal, IPv6 bracketed and compressed).
 */
export function isServerLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/**
 * A URL typed without its scheme (`localhost:3000/mcp`, `127.0.0.1:3000`) as the user most likely
 * meant it: http:// for a loopback host (local servers rarely have TLS), https:// otherwise.
 */
export function withLikelyScheme(raw: string): string | undefined {
  const text = raw.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) || text === '') return undefined;
  const candidate = `http://${text}`;
  if (!URL.canParse(candidate)) return undefined;
  const url = new URL(candidate);
  // Only what looks like a host: a name with a dot, an address, a port, or localhost.
  if (!/[.:]/.test(url.host) && url.hostname !== 'localhost') return undefined;
  return isLoopbackHost(url.hostname) ? candidate : `https://${text}`;
}
