// The run's cookie jar: what RFC 6265 subset it keeps, where it sends cookies back, and its limits.

import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CookieJar, MAX_COOKIE_BYTES, MAX_COOKIE_LIFETIME_MS, MAX_COOKIES, MAX_MASKED_COOKIE_VALUES } from '../../../src/http/cookie-jar.js';
import { useRouteServer } from '../../helpers/route-server.js';

const ORIGIN = 'http://127.0.0.1:8080';
const at = (path: string, origin = ORIGIN) => new URL(path, origin);

/** A jar on a clock the test moves, with what it logged and what it handed to the redactor. */
function jarFor(origin = ORIGIN) {
  let now = Date.parse('2026-12-01T10:00:00Z');
  const secrets: string[] = [];
  const logs: { msg: string; cookie?: string; reason?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(JSON.parse(chunk.toString()) as { msg: string });
      callback();
    },
  });
  const jar = new CookieJar({
    origin: new URL(origin).origin,
    logger: pino({ level: 'debug' }, sink),
    onSecret: (value) => secrets.push(value),
    now: () => now,
  });
  return { jar, secrets, logs, advance: (ms: number) => (now += ms), now: () => now };
}

describe('CookieJar', () => {
  it('sends a session cookie back to its origin for the run, and several in one Cookie header', () => {
    const { jar } = jarFor();
    jar.store(at('/mcp'), ['sid=abc', 'lb=node-2; Path=/; HttpOnly; SameSite=Lax']);
    expect(jar.header(at('/mcp'))).toBe('sid=abc; lb=node-2');
    expect(jar.size).toBe(2);
  });

  it('never sends a cookie to another origin (port, scheme or host), and ignores cookies set by one', () => {
    const { jar } = jarFor();
    jar.store(at('/mcp'), 'sid=abc; Path=/');
    expect(jar.header(at('/mcp', 'http://127.0.0.1:8081'))).toBeUndefined();
    expect(jar.header(at('/mcp', 'https://127.0.0.1:8080'))).toBeUndefined();
    expect(jar.header(at('/mcp', 'http://localhost:8080'))).toBeUndefined();
    jar.store(at('/mcp', 'http://127.0.0.1:9999'), 'evil=1; Path=/');
    expect(jar.header(at('/mcp'))).toBe('sid=abc');
  });

  it('sends a cookie only under its Path, with the default path taken from the request (RFC 6265 §5.1.4)', () => {
    const { jar } = jarFor();
    jar.store(at('/api/mcp'), ['dflt=1', 'deep=2; Path=/api/mcp/', 'other=3; Path=/admin', 'relative=4; Path=nope']);
    // dflt and relative get the default path /api; longer paths come first (§5.4).
    expect(jar.header(at('/api/mcp/'))).toBe('deep=2; dflt=1; relative=4');
    expect(jar.header(at('/api/mcp'))).toBe('dflt=1; relative=4');
    expect(jar.header(at('/apix'))).toBeUndefined();
    expect(jar.header(at('/admin/x'))).toBe('other=3');
    const root = jarFor().jar;
    root.store(at('/mcp'), 'top=1');
    expect(root.header(at('/anything'))).toBe('top=1');
  });

  it('honours Max-Age and Expires, Max-Age first, and lets the server delete a cookie', () => {
    const { jar, advance, now } = jarFor();
    jar.store(at('/'), [
      'short=1; Max-Age=60',
      `dated=2; Expires=${new Date(now() + 120_000).toUTCString()}`,
      `both=3; Max-Age=30; Expires=${new Date(now() + 999_000).toUTCString()}`,
      'badage=4; Max-Age=soon',
      'baddate=5; Expires=never',
    ]);
    expect(jar.header(at('/'))).toBe('short=1; dated=2; both=3; badage=4; baddate=5');
    advance(31_000);
    expect(jar.header(at('/'))).toBe('short=1; dated=2; badage=4; baddate=5');
    advance(30_000);
    expect(jar.header(at('/'))).toBe('dated=2; badage=4; baddate=5');
    jar.store(at('/'), ['badage=gone; Max-Age=0', `baddate=gone; Expires=${new Date(now() - 1000).toUTCString()}`]);
    expect(jar.header(at('/'))).toBe('dated=2');
    advance(60_000);
    expect(jar.header(at('/'))).toBeUndefined();
  });

  it('gives a cookie 400 days at most, however far Max-Age or Expires reach', () => {
    const { jar, advance } = jarFor();
    jar.store(at('/'), ['far=1; Max-Age=99999999999999999999999', 'later=2; Expires=Fri, 31 Dec 9999 23:59:59 GMT']);
    advance(MAX_COOKIE_LIFETIME_MS - 1);
    expect(jar.header(at('/'))).toBe('far=1; later=2');
    advance(1);
    expect(jar.header(at('/'))).toBeUndefined();
  });

  it('replaces a cookie of the same name and path, keeping its place', () => {
    const { jar } = jarFor();
    jar.store(at('/'), ['a=1', 'b=2']);
    jar.store(at('/'), 'a=3');
    expect(jar.header(at('/'))).toBe('a=3; b=2');
  });

  it('keeps a Secure cookie only from https and sends it only over https', () => {
    const plain = jarFor();
    plain.jar.store(at('/'), 'tls=1; Secure');
    expect(plain.jar.size).toBe(0);
    expect(plain.logs.at(-1)).toMatchObject({ msg: 'cookie from the server ignored', cookie: 'tls', reason: 'Secure, but the endpoint is plain http://' });
    const secure = jarFor('https://mcp.example.com');
    secure.jar.store(new URL('https://mcp.example.com/mcp'), ['tls=1; Secure; Path=/', 'any=2; Path=/']);
    expect(secure.jar.header(new URL('https://mcp.example.com/mcp'))).toBe('tls=1; any=2');
  });

  it('keeps a cookie whose Domain widens to a parent as host-only, and refuses one for another domain', () => {
    const { jar, logs } = jarFor('https://api.example.com');
    jar.store(new URL('https://api.example.com/mcp'), [
      'wide=1; Domain=.example.com; Path=/',
      'exact=2; Domain=API.example.com; Path=/',
      'foreign=3; Domain=example.org; Path=/',
      'suffix=4; Domain=pi.example.com; Path=/',
    ]);
    expect(jar.header(new URL('https://api.example.com/mcp'))).toBe('wide=1; exact=2');
    // Host-only: the origin check means no other host ever gets it.
    expect(jar.header(new URL('https://www.example.com/mcp'))).toBeUndefined();
    expect(logs.filter((line) => line.msg === 'cookie from the server ignored').map((line) => line.cookie)).toEqual(['foreign', 'suffix']);
  });

  it('applies the __Secure- and __Host- name prefixes (RFC 6265bis §4.1.3)', () => {
    const { jar } = jarFor('https://mcp.example.com');
    const url = new URL('https://mcp.example.com/mcp');
    jar.store(url, [
      '__Secure-a=1; Path=/',
      '__Secure-b=2; Secure; Path=/',
      '__Host-c=3; Secure; Path=/',
      '__Host-d=4; Secure; Path=/mcp',
      '__Host-e=5; Secure; Path=/; Domain=mcp.example.com',
    ]);
    expect(jar.header(url)).toBe('__Secure-b=2; __Host-c=3');
  });

  it('ignores a field without a name=value pair, with an empty name, or with bytes no header can carry', () => {
    const { jar, logs } = jarFor();
    jar.store(at('/'), ['novalue', '=anonymous', 'ctl=a\u0001b', 'wide=\u20ac', 'tab=a\tb', 'ok=1']);
    expect(jar.header(at('/'))).toBe('tab=a\tb; ok=1');
    expect(logs.filter((line) => line.msg === 'cookie from the server ignored')).toHaveLength(4);
  });

  it(`ignores a Set-Cookie larger than ${MAX_COOKIE_BYTES} bytes`, () => {
    const { jar } = jarFor();
    const fits = `big=${'x'.repeat(MAX_COOKIE_BYTES - 4)}`;
    jar.store(at('/'), [fits, `huge=${'x'.repeat(MAX_COOKIE_BYTES)}`]);
    expect(jar.size).toBe(1);
    expect(jar.header(at('/'))).toBe(fits);
  });

  it(`keeps at most ${MAX_COOKIES} cookies, dropping the least recently sent first`, () => {
    const { jar, advance } = jarFor();
    jar.store(at('/'), 'sticky=1');
    jar.store(
      at('/'),
      Array.from({ length: MAX_COOKIES - 1 }, (_, i) => `c${i}=v; Path=/p${i}`),
    );
    advance(1);
    expect(jar.header(at('/'))).toBe('sticky=1'); // used: not the next to go
    jar.store(at('/'), 'newest=1; Path=/n');
    expect(jar.size).toBe(MAX_COOKIES);
    expect(jar.header(at('/p0'))).toBe('sticky=1');
    expect(jar.header(at('/p1'))).toBe('c1=v; sticky=1');
    expect(jar.header(at('/n'))).toBe('newest=1; sticky=1');
  });

  it('drops expired cookies before live ones when it is full', () => {
    const { jar, advance } = jarFor();
    jar.store(
      at('/'),
      Array.from({ length: MAX_COOKIES }, (_, i) => (i === MAX_COOKIES - 1 ? `brief=1; Path=/b; Max-Age=1` : `c${i}=v; Path=/p${i}`)),
    );
    advance(2_000);
    jar.store(at('/'), 'late=1; Path=/l');
    expect(jar.size).toBe(MAX_COOKIES);
    expect(jar.header(at('/p0'))).toBe('c0=v');
  });

  it(`hands values of 8 characters or more to the redactor once each, ${MAX_MASKED_COOKIE_VALUES} at most`, () => {
    const { jar, secrets } = jarFor();
    jar.store(at('/'), ['short=abc', 'long=0123456789abcdef', 'again=0123456789abcdef']);
    expect(secrets).toEqual(['0123456789abcdef']);
    for (let i = 0; i < MAX_MASKED_COOKIE_VALUES + 10; i++) jar.store(at('/'), `rotating=value-${String(i).padStart(6, '0')}`);
    expect(secrets).toHaveLength(MAX_MASKED_COOKIE_VALUES);
    expect(jar.size).toBe(4);
  });

  it('works without a logger or a redactor, on the real clock', () => {
    const jar = new CookieJar({ origin: ORIGIN });
    jar.store(at('/'), ['a=0123456789', 'bad']);
    expect(jar.header(at('/'))).toBe('a=0123456789');
  });
});

describe('Set-Cookie as undici hands it over', () => {
  const routes = useRouteServer();

  it('arrives as an array when a reply sets several cookies, and is stored whole', async () => {
    const exchange = await routes.exchange((_req, res) => {
      res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
      res.end('{}');
    });
    for await (const chunk of exchange.body) void chunk;
    expect(exchange.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    const jar = new CookieJar({ origin: ORIGIN });
    jar.store(at('/'), exchange.headers['set-cookie']);
    expect(jar.header(at('/'))).toBe('a=1; b=2');
  });
});
