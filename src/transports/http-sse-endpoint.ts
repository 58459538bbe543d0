// The 2024-11-05 `endpoint` event's URL: resolved against the stream's URL, kept only on the stream's own origin.

import { BridgeError } from '../core/errors.js';
import { maskUrl } from '../logging/redactor.js';

/**
 * The largest `endpoint` event accepted, in bytes: its data is one URL (a path and a session id in
 * practice), so anything near this is not an endpoint, and the stream is given up before more of
 * it is held.
 */
export const MAX_ENDPOINT_EVENT_BYTES = 8 * 1024;

/** Why an endpoint the server named is not used, and what to do. */
export const ENDPOINT_ORIGIN_HINT =
  'the bridge posts messages, with the credential, only to the origin (scheme, host and port) of --url; if the server really lives elsewhere, pass that address with --url';

/**
 * The URL messages are POSTed to, from the data of the stream's `endpoint` event (2024-11-05
 * transports §HTTP with SSE: "a URI for the client to use for sending messages"), resolved against
 * the stream's URL (RFC 3986 §5.2). Only the stream's own origin (RFC 6454 §4) is accepted: the
 * credential and cookies go with every POST, and a server that could point them at another host
 * (or at a `javascript:` or `file:` URL) would take them there. A user name or password in it is
 * refused too; the fragment is dropped (it never goes on the wire). Throws a BridgeError that
 * names what is wrong; nothing is contacted.
 */
export function messageEndpointOf(data: string, streamUrl: URL): URL {
  const text = data.trim();
  const refuse = (why: string, extra: Record<string, string> = {}) =>
    new BridgeError('REMOTE_BAD_REPLY', `the server's HTTP+SSE endpoint event ${why}; nothing was sent there`, {
      ...extra,
      hint: ENDPOINT_ORIGIN_HINT,
    });
  if (Buffer.byteLength(text, 'utf8') > MAX_ENDPOINT_EVENT_BYTES) throw refuse(`is longer than ${MAX_ENDPOINT_EVENT_BYTES} bytes`);
  if (text === '' || !URL.canParse(text, streamUrl.href)) throw refuse('does not name a URL');
  const url = new URL(text, streamUrl);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse(`names a ${url.protocol} URL, not an http(s) one`);
  if (url.username !== '' || url.password !== '') throw refuse('names a URL with a user name or password');
  if (url.origin !== streamUrl.origin) {
    throw refuse(`names another origin (${url.origin}) than the stream's (${streamUrl.origin})`, { endpoint: maskUrl(url), origin: streamUrl.origin });
  }
  url.hash = '';
  return url;
}
