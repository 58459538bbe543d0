// The endpoint URL as given (--url, FENBS_MCP_URL or the default) → a URL the run may send its credential to; throws UsageError.

import { UsageError } from '../core/errors.js';
import { isLoopbackHost, withLikelyScheme } from '../core/hosts.js';
import { maskUrl } from '../logging/redactor.js';

/**
 * `source` names where the URL came from (`--url`, `FENBS_MCP_URL`), so the message points at it;
 * `secret` names what plain http:// would expose, when there is something.
 */
export function parseUrl(raw: string, source: string, allowHttp: boolean, secret: string | undefined): URL {
  const likely = withLikelyScheme(raw);
  const fix =
    likely === undefined
      ? 'fenbs-mcp --url https://example.com/mcp'
      : source === '--url'
        ? `fenbs-mcp --url ${maskUrl(likely)}`
        : `${source}=${maskUrl(likely)}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Masked: a URL that does not parse may still carry a password or an API key.
    throw new UsageError(`${source}: invalid URL "${maskUrl(raw)}"${likely === undefined ? '' : ' (no http:// or https:// in front)'}`, fix);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`${source}: the URL must start with https:// or http://, got "${maskUrl(raw)}"`, fix);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UsageError(`${source}: the URL must not carry a user name or password; give the token through the environment`);
  }
  if (url.protocol === 'http:' && secret !== undefined && !allowHttp && !isLoopbackHost(url.hostname)) {
    throw new UsageError(
      `refusing to send ${secret} over plain http:// to ${url.host}: anyone on the network path could read it`,
      'use an https:// URL, or pass --allow-http if this network is trusted',
    );
  }
  return url;
}
