import { describe, expect, it } from 'vitest';
import { createConfig, isLoopbackHost, MAX_LINE_BYTES, REQUEST_TIMEOUT_MS, UsageError, type RawOptions } from '../src/config.js';

const noFile = () => {
  throw new Error('ENOENT: no such file');
};
const make = (options: RawOptions = {}, env: Record<string, string> = {}, readTextFile: (path: string) => string = noFile) =>
  createConfig({ options, env, readTextFile });

describe('createConfig', () => {
  it('defaults to the fenbs endpoint, FENBS_TOKEN and documented limits', () => {
    const config = make({}, { FENBS_TOKEN: 'tok-123' });
    expect(config.url.href).toBe('https://fenbs.ai/api/mcp');
    expect(config.token).toBe('tok-123');
    expect(config.requestTimeoutMs).toBe(REQUEST_TIMEOUT_MS);
    expect(config.maxLineBytes).toBe(MAX_LINE_BYTES);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('prefers --url over FENBS_MCP_URL', () => {
    expect(make({ url: 'https://a.example/mcp' }, { FENBS_MCP_URL: 'https://b.example/mcp' }).url.host).toBe('a.example');
    expect(make({}, { FENBS_MCP_URL: 'https://b.example/mcp' }).url.host).toBe('b.example');
  });

  it('reads the token from the variable named by --token-env', () => {
    expect(make({ tokenEnv: 'OTHER' }, { OTHER: 'tok-other', FENBS_TOKEN: 'no' }).token).toBe('tok-other');
  });

  it('reads the token from --token-file, trimmed', () => {
    const config = make({ tokenFile: '/t' }, {}, () => 'tok-file\n');
    expect(config.token).toBe('tok-file');
    expect(config.tokenSource).toBe('file /t');
  });

  it('treats an empty token as none', () => {
    expect(make({}, { FENBS_TOKEN: '  ' }).token).toBeUndefined();
  });

  it.each([
    ['an unparseable URL', { url: 'not a url' }, {}, /invalid URL/],
    ['a non-HTTP scheme', { url: 'ftp://x/mcp' }, {}, /https:\/\/ or http:\/\//],
    ['credentials in the URL', { url: 'https://u:p@x/mcp' }, {}, /user name or password/],
    ['a token over http to a remote host', { url: 'http://example.invalid/mcp' }, { FENBS_TOKEN: 'tok-123' }, /plain http/],
    ['Authorization given with -H', { header: ['Authorization: Bearer tok-123'] }, {}, /process lists/],
    ['Cookie given with -H', { header: ['cookie: a=b'] }, {}, /refused/],
    ['a bridge-owned header', { header: ['Mcp-Session-Id: x'] }, {}, /sets that header itself/],
    ['an Mcp-Param header', { header: ['Mcp-Param-Region: eu'] }, {}, /sets that header itself/],
    ['a header without a colon', { header: ['X-Team'] }, {}, /Name: value/],
    ['a header name with spaces', { header: ['X Team: a'] }, {}, /Name: value/],
    ['a negative timeout', { requestTimeout: '-1' }, {}, /whole number/],
    ['a zero line limit', { maxLineBytes: '0' }, {}, /at least 1/],
    ['an unknown log level', { logLevel: 'loud' }, {}, /log-level/],
    ['an unreadable token file', { tokenFile: '/missing' }, {}, /cannot read --token-file/],
  ])('refuses %s', (_title, options, env, message) => {
    expect(() => make(options as RawOptions, env as Record<string, string>)).toThrow(UsageError);
    expect(() => make(options as RawOptions, env as Record<string, string>)).toThrow(message);
  });

  it('never repeats the refused credential in its message', () => {
    try {
      make({ header: ['Authorization: Bearer secret-value-42'] });
    } catch (error) {
      expect(String((error as Error).message) + String((error as UsageError).fix)).not.toContain('secret-value-42');
      expect((error as UsageError).fix).toMatch(/FENBS_TOKEN/);
    }
  });

  it('allows http to a loopback host, and elsewhere with --allow-http', () => {
    expect(make({ url: 'http://127.0.0.1:9/mcp' }, { FENBS_TOKEN: 'tok-123' }).url.port).toBe('9');
    expect(make({ url: 'http://example.invalid/mcp', allowHttp: true }, { FENBS_TOKEN: 'tok-123' }).allowHttp).toBe(true);
  });

  it('keeps user headers with their values', () => {
    expect(make({ header: ['X-Team:  platform '] }).extraHeaders).toEqual([['X-Team', 'platform']]);
  });

  it('accepts 0 as "no deadline"', () => {
    expect(make({ requestTimeout: '0' }).requestTimeoutMs).toBe(0);
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['localhost', true],
    ['127.0.0.1', true],
    ['127.9.9.9', true],
    ['[::1]', true],
    ['api.localhost', true],
    ['10.0.0.1', false],
    ['example.com', false],
    ['127.0.0.1.example.com', false],
  ])('%s → %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});
