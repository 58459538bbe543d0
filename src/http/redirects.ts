// Which redirects the bridge follows: a 307 or 308 to the same origin, a bounded number of hops per request.

/**
 * Same-origin redirects one request may follow; one more is a loop. Frameworks need one (the
 * trailing slash); a few more leave room for a chain without letting a loop spin.
 */
export const MAX_REDIRECT_HOPS = 5;

/** Why a redirect the bridge refused is not followed, and what to do. */
export const REDIRECT_HINT =
  'so the token, session id and cookies never reach another address (and a POST is never turned into a GET), only a 307 or 308 to the same scheme, host and port is followed: if the new address is right, pass it with --url';

/**
 * The URL a redirect points to when the bridge follows it, or undefined when it refuses it.
 * Followed: 307 and 308 only, which keep the method and the body (RFC 9110 §15.4.8, §15.4.9),
 * so a POST is re-sent as it was; 301/302/303 may turn a POST into a GET (RFC 9110 §15.4.2-4) and
 * lose the message. Only to the same origin (scheme, host and port: RFC 6454 §4): the token,
 * session id and cookies belong to that origin and never go anywhere else. A target that carries
 * a user name or password is refused too. The fragment is dropped (it never goes on the wire).
 */
export function sameOriginTarget(current: URL, status: number, location: string | undefined): URL | undefined {
  if ((status !== 307 && status !== 308) || location === undefined || !URL.canParse(location, current.href)) return undefined;
  const target = new URL(location, current);
  if (target.origin !== current.origin || target.username !== '' || target.password !== '') return undefined;
  target.hash = '';
  return target;
}
