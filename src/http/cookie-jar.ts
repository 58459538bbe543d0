// Keeps the cookies the endpoint's origin sets, in memory for the run, and hands them back to that origin only (an RFC 6265 subset).

import type { Logger } from '../logging/logger.js';
import { MIN_MASKABLE_SECRET_CHARS } from '../logging/redactor.js';

/** Cookies kept at once; RFC 6265 §6.1 asks user agents for at least 50 per domain. */
export const MAX_COOKIES = 50;
/** Largest Set-Cookie kept (name, value and attributes); RFC 6265 §6.1 asks for at least 4096 bytes. */
export const MAX_COOKIE_BYTES = 4096;
/**
 * Distinct cookie values handed to the redactor. A load balancer that sets a fresh value on every
 * reply would otherwise grow the masking work of every log line for the whole run.
 */
export const MAX_MASKED_COOKIE_VALUES = 256;
/** Longest lifetime a cookie gets, whatever Max-Age or Expires say (RFC 6265bis §5.6.1, §5.6.2: 400 days). */
export const MAX_COOKIE_LIFETIME_MS = 400 * 24 * 60 * 60 * 1000;

/**
 * Whether a cookie name or value holds what it may not (RFC 6265bis §5.6 step 1: control
 * characters but HTAB) or what a header cannot carry (a character above U+00FF).
 */
function unsendable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f || code > 0xff) return true;
  }
  return false;
}

interface StoredCookie {
  name: string;
  value: string;
  path: string;
  secure: boolean;
  /** Epoch ms; undefined = a session cookie, kept for the run. */
  expiresAt: number | undefined;
  created: number;
  lastUsed: number;
}

export interface CookieJarOptions {
  /** The one origin whose cookies are kept and to which they are sent. */
  origin: string;
  logger?: Logger | undefined;
  /** Told each cookie value worth masking (a redactor's `add`), up to MAX_MASKED_COOKIE_VALUES of them. */
  onSecret?: ((value: string) => void) | undefined;
  /** The clock, for expiry (epoch ms). */
  now?: () => number;
}

/**
 * RFC 6265 §5.1.4 default-path: the request path up to, not including, its right-most "/"; "/"
 * when that leaves nothing.
 */
function defaultPath(url: URL): string {
  const path = url.pathname;
  const last = path.lastIndexOf('/');
  return last <= 0 ? '/' : path.slice(0, last);
}

/** RFC 6265 §5.1.4 path-match. */
function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath.charAt(cookiePath.length) === '/';
}

export class CookieJar {
  readonly #origin: string;
  readonly #options: CookieJarOptions;
  readonly #now: () => number;
  /** Keyed by name and path; the domain is always the one host. */
  readonly #cookies = new Map<string, StoredCookie>();
  readonly #masked = new Set<string>();

  constructor(options: CookieJarOptions) {
    this.#origin = options.origin;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#cookies.size;
  }

  /** Takes the Set-Cookie fields of a reply from `url`; a reply from any other origin is ignored. */
  store(url: URL, setCookie: string | string[] | undefined): void {
    if (setCookie === undefined || url.origin !== this.#origin) return;
    for (const field of Array.isArray(setCookie) ? setCookie : [setCookie]) {
      const refused = this.#storeOne(url, field);
      // Names only: a value is a credential.
      if (refused !== undefined) this.#options.logger?.debug({ cookie: refused.name, reason: refused.reason }, 'cookie from the server ignored');
    }
  }

  /** The Cookie header for a request to `url` (RFC 6265 §5.4), or undefined when none applies. */
  header(url: URL): string | undefined {
    if (this.#cookies.size === 0 || url.origin !== this.#origin) return undefined;
    const now = this.#now();
    this.#dropExpired(now);
    const secure = url.protocol === 'https:';
    const sent = [...this.#cookies.values()]
      .filter((cookie) => pathMatches(url.pathname, cookie.path) && (secure || !cookie.secure))
      // Longer paths first, then older cookies first (§5.4 step 2).
      .sort((a, b) => b.path.length - a.path.length || a.created - b.created);
    if (sent.length === 0) return undefined;
    for (const cookie of sent) cookie.lastUsed = now;
    return sent.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
  }

  /** Stores one Set-Cookie field (RFC 6265 §5.2, §5.3); returns why it was ignored, if it was. */
  #storeOne(url: URL, field: string): { name: string; reason: string } | undefined {
    const [pair = '', ...attributes] = field.split(';');
    const equals = pair.indexOf('=');
    const name = equals === -1 ? '' : pair.slice(0, equals).trim();
    if (name === '') return { name: '(none)', reason: 'no name=value pair' };
    if (Buffer.byteLength(field) > MAX_COOKIE_BYTES) return { name, reason: `larger than ${MAX_COOKIE_BYTES} bytes` };
    const value = pair.slice(equals + 1).trim();
    if (unsendable(name) || unsendable(value)) return { name, reason: 'control characters or characters a header cannot carry' };
    const now = this.#now();
    let path: string | undefined;
    let domain: string | undefined;
    let secure = false;
    let maxAgeAt: number | undefined;
    let expiresAt: number | undefined;
    for (const attribute of attributes) {
      const at = attribute.indexOf('=');
      const key = (at === -1 ? attribute : attribute.slice(0, at)).trim().toLowerCase();
      const text = at === -1 ? '' : attribute.slice(at + 1).trim();
      if (key === 'secure') secure = true;
      else if (key === 'path') path = text.startsWith('/') ? text : undefined;
      else if (key === 'domain' && text !== '') domain = text.replace(/^\./, '').toLowerCase();
      else if (key === 'max-age' && /^-?\d+$/.test(text)) {
        const seconds = Number(text);
        maxAgeAt = seconds <= 0 ? -Infinity : now + seconds * 1000;
      } else if (key === 'expires' && !Number.isNaN(Date.parse(text))) expiresAt = Date.parse(text);
    }
    const host = url.hostname.toLowerCase();
    // A Domain naming a parent widens the cookie to sibling hosts; the bridge talks to this one
    // host only, so the cookie stays host-only. A Domain that is not this host or a parent of it
    // is refused (§5.3 step 6).
    if (domain !== undefined && domain !== host && !host.endsWith(`.${domain}`)) return { name, reason: `its Domain ${domain} does not cover ${host}` };
    // RFC 6265bis §5.7: a Secure cookie only from a secure origin, and the name prefixes' rules (§4.1.3).
    if (secure && url.protocol !== 'https:') return { name, reason: 'Secure, but the endpoint is plain http://' };
    const lowerName = name.toLowerCase();
    if ((lowerName.startsWith('__secure-') || lowerName.startsWith('__host-')) && !secure)
      return { name, reason: 'a __Secure- or __Host- name without Secure' };
    if (lowerName.startsWith('__host-') && (domain !== undefined || path !== '/'))
      return { name, reason: 'a __Host- name with a Domain or a Path other than /' };

    const expiry = maxAgeAt ?? expiresAt;
    const cookie: StoredCookie = {
      name,
      value,
      path: path ?? defaultPath(url),
      secure,
      expiresAt: expiry === undefined ? undefined : Math.min(expiry, now + MAX_COOKIE_LIFETIME_MS),
      created: now,
      lastUsed: now,
    };
    const key = `${cookie.name}\n${cookie.path}`;
    const old = this.#cookies.get(key);
    // An expiry in the past is how a server deletes a cookie (§5.3 step 11).
    if (cookie.expiresAt !== undefined && cookie.expiresAt <= now) {
      this.#cookies.delete(key);
      this.#options.logger?.debug({ cookie: name }, 'cookie removed by the server');
      return undefined;
    }
    if (old !== undefined) cookie.created = old.created;
    this.#cookies.set(key, cookie);
    if (old === undefined)
      this.#options.logger?.debug(
        { cookie: name, path: cookie.path, until: cookie.expiresAt === undefined ? 'the end of the run' : new Date(cookie.expiresAt).toISOString() },
        'cookie stored for this run',
      );
    this.#mask(value);
    this.#evict(now);
    return undefined;
  }

  /** Values short enough to be ordinary words are not masked: masking "true" would garble every log line. */
  #mask(value: string): void {
    if (value.length < MIN_MASKABLE_SECRET_CHARS || this.#masked.has(value) || this.#masked.size >= MAX_MASKED_COOKIE_VALUES) return;
    this.#masked.add(value);
    this.#options.onSecret?.(value);
  }

  #dropExpired(now: number): void {
    for (const [key, cookie] of this.#cookies) {
      if (cookie.expiresAt !== undefined && cookie.expiresAt <= now) this.#cookies.delete(key);
    }
  }

  /** Over MAX_COOKIES: expired cookies go first, then the least recently used (§5.3 step 12). */
  #evict(now: number): void {
    if (this.#cookies.size <= MAX_COOKIES) return;
    this.#dropExpired(now);
    while (this.#cookies.size > MAX_COOKIES) {
      let oldest: [string, StoredCookie] | undefined;
      for (const entry of this.#cookies) if (oldest === undefined || entry[1].lastUsed < oldest[1].lastUsed) oldest = entry;
      this.#cookies.delete(oldest![0]);
      this.#options.logger?.debug({ cookie: oldest![1].name, limit: MAX_COOKIES }, 'cookie dropped: too many cookies');
    }
  }
}
