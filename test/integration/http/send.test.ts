import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BridgeError } from '../../../src/core/errors.js';
import { createDispatcher, proxyFor, redactUserinfo } from '../../../src/http/dispatcher.js';
import { toBridgeError } from '../../../src/http/failures.js';
import { sendHttp } from '../../../src/http/send.js';

const url = new URL('https://mcp.example:8443/mcp');
const failure = (code: string, message = 'boom') => Object.assign(new Error(message), { code });

describe('toBridgeError', () => {
  it.each([
    ['ECONNREFUSED', 'REMOTE_UNREACHABLE', /check --url/, true],
    ['ENOTFOUND', 'REMOTE_UNREACHABLE', /host name/, true],
    ['EAI_AGAIN', 'REMOTE_UNREACHABLE', /DNS/, true],
    ['UND_ERR_CONNECT_TIMEOUT', 'REMOTE_UNREACHABLE', /--connect-timeout/, true],
    ['ECONNRESET', 'REMOTE_CONNECTION_LOST', /closed the connection/, undefined],
    ['UND_ERR_SOCKET', 'REMOTE_CONNECTION_LOST', /closed the connection/, undefined],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'REMOTE_TLS', /--ca-file/, undefined],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'REMOTE_TLS', /NODE_EXTRA_CA_CERTS/, undefined],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'REMOTE_TLS', /host name/, undefined],
    ['CERT_HAS_EXPIRED', 'REMOTE_TLS', /--ca-file/, undefined],
    ['EMFILE', 'REMOTE_UNREACHABLE', /ulimit -n/, true],
    ['ENETUNREACH', 'REMOTE_UNREACHABLE', /--connect-timeout/, true],
    ['EPIPE', 'REMOTE_CONNECTION_LOST', /closed the connection/, undefined],
  ])('maps %s to %s with a hint', (code, bridgeCode, hint, neverSent) => {
    const error = toBridgeError(failure(code), undefined, { url });
    expect(error.code).toBe(bridgeCode);
    expect(error.context.hint).toMatch(hint);
    expect(error.context.neverSent).toBe(neverSent);
  });

  it('looks through undici cause chains', () => {
    const wrapped = Object.assign(new TypeError('fetch failed'), { cause: failure('ECONNREFUSED') });
    expect(toBridgeError(wrapped, undefined, { url }).code).toBe('REMOTE_UNREACHABLE');
  });

  it('names a refused proxy tunnel', () => {
    const error = toBridgeError(failure('UND_ERR_ABORTED', 'Proxy response (407) !== 200 when HTTP Tunneling'), undefined, { url });
    expect(error.code).toBe('PROXY_FAILED');
    expect(error.context.hint).toMatch(/HTTPS_PROXY/);
  });

  it('mentions the proxy, without its credentials, when the connection fails through one', () => {
    const error = toBridgeError(failure('ECONNREFUSED'), undefined, { url, proxy: 'http://user:pw-secret@proxy.example:3128' });
    expect(error.message).toContain('proxy.example:3128');
    expect(error.message).not.toContain('pw-secret');
    expect(error.context.hint).toMatch(/HTTPS_PROXY/);
  });

  it('reports the reason of an aborted signal instead of the abort error', () => {
    const controller = new AbortController();
    const deadline = new BridgeError('REQUEST_TIMEOUT', 'no answer');
    controller.abort(deadline);
    expect(toBridgeError(failure('UND_ERR_ABORTED', 'aborted'), controller.signal, { url })).toBe(deadline);
  });

  it('keeps an unknown failure as a lost connection with its code', () => {
    const error = toBridgeError(failure('EWHATEVER', 'odd'), undefined, { url });
    expect(error.code).toBe('REMOTE_CONNECTION_LOST');
    expect(error.context.cause).toBe('EWHATEVER');
  });
});

describe('toBridgeError, beyond the code table', () => {
  it('reports a body that cannot be decompressed as a bad reply', () => {
    const error = toBridgeError(failure('Z_DATA_ERROR', 'incorrect header check'), undefined, { url });
    expect(error.code).toBe('REMOTE_BAD_REPLY');
    expect(error.message).toContain('could not be decompressed: incorrect header check');
  });

  it('keeps a failure without a code or message as a lost connection, described by its text', () => {
    const error = toBridgeError('plain text failure', undefined, { url });
    expect(error.code).toBe('REMOTE_CONNECTION_LOST');
    expect(error.context.cause).toBe('plain text failure');
  });

  it('uses the abort error when the signal aborted for a reason that is not a BridgeError', () => {
    const error = toBridgeError(failure('ECONNRESET'), AbortSignal.abort('just because'), { url });
    expect(error.code).toBe('REMOTE_CONNECTION_LOST');
  });
});

describe('redactUserinfo', () => {
  it('keeps only the origin of a proxy URL, and says so when it does not parse', () => {
    expect(redactUserinfo('http://user:pw@proxy.example:3128/path')).toBe('http://proxy.example:3128');
    expect(redactUserinfo('http://proxy.example:3128')).toBe('http://proxy.example:3128');
    expect(redactUserinfo('not a url')).toBe('(unparseable proxy URL)');
  });
});

describe('proxyFor and the dispatcher agree', () => {
  // Every host name resolves to loopback, so a direct connection reaches `direct` and no test
  // depends on a DNS server; the two proxies record what reaches them (and refuse it).
  const toLoopback = ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all === true) callback(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  }) as unknown as LookupFunction;
  const seen = { A: [] as string[], B: [] as string[], direct: 0 };
  const closers: (() => void)[] = [];
  const urls = { A: '', B: '', port: 0 };
  beforeAll(async () => {
    for (const name of ['A', 'B'] as const) {
      const proxy = createHttpServer((req, res) => (seen[name].push(req.url ?? ''), res.writeHead(502).end()));
      proxy.on('connect', (req, socket) => (seen[name].push(req.url ?? ''), socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n')));
      proxy.listen(0, '127.0.0.1');
      await once(proxy, 'listening');
      urls[name] = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      closers.push(() => proxy.close());
    }
    const direct = createNetServer((socket) => (seen.direct++, socket.destroy()));
    direct.listen(0, '127.0.0.1');
    await once(direct, 'listening');
    urls.port = (direct.address() as AddressInfo).port;
    closers.push(() => direct.close());
  });
  afterAll(() => closers.forEach((close) => close()));

  const https = 'https://api.example.test:{P}/mcp';
  const http = 'http://api.example.test:{P}/mcp';
  // [target, environment, where undici's EnvHttpProxyAgent sends it]; A and B stand for the proxies, {P} for the target's port.
  const cases: [string, Record<string, string>, 'A' | 'B' | 'direct'][] = [
    [https, {}, 'direct'],
    [https, { HTTPS_PROXY: 'A' }, 'A'],
    [https, { https_proxy: 'A', HTTPS_PROXY: 'B' }, 'A'],
    [https, { HTTP_PROXY: 'A' }, 'A'],
    [https, { https_proxy: '', HTTP_PROXY: 'A' }, 'A'],
    [https, { HTTPS_PROXY: 'A', HTTP_PROXY: 'B' }, 'A'],
    [http, { HTTPS_PROXY: 'A' }, 'direct'],
    [http, { HTTPS_PROXY: 'A', http_proxy: 'B' }, 'B'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'example.test' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: '.example.test' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: '*.example.test' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'EXAMPLE.Test' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'API.example.test:{P}' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'api.example.test:{P+1}' }, 'A'],
    ['https://api.example.test/mcp', { HTTPS_PROXY: 'A', NO_PROXY: 'api.example.test:443' }, 'direct'],
    ['http://api.example.test/mcp', { HTTP_PROXY: 'A', NO_PROXY: 'api.example.test:443' }, 'A'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'ample.test' }, 'A'],
    ['https://notexample.test:{P}/mcp', { HTTPS_PROXY: 'A', NO_PROXY: 'example.test' }, 'A'],
    ['https://api.example.test.:{P}/mcp', { HTTPS_PROXY: 'A', NO_PROXY: 'example.test' }, 'A'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: '*' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: ' *' }, 'A'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'other.test,*' }, 'A'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: '' }, 'A'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: ' , ,\t' }, 'A'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'other.test  api.example.test' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', NO_PROXY: 'other.test,\n example.test' }, 'direct'],
    [https, { https_proxy: 'A', no_proxy: 'example.test' }, 'direct'],
    [https, { HTTPS_PROXY: 'A', no_proxy: '', NO_PROXY: 'example.test' }, 'A'],
    [https, { HTTPS_PROXY: 'A', no_proxy: 'example.test', NO_PROXY: '' }, 'direct'],
    ['http://[::1]:{P}/mcp', { HTTP_PROXY: 'A', NO_PROXY: '[::1]' }, 'direct'],
    ['http://[::1]:{P}/mcp', { HTTP_PROXY: 'A', NO_PROXY: '[::1]:{P}' }, 'direct'],
    ['http://[::1]:{P}/mcp', { HTTP_PROXY: 'A', NO_PROXY: '::1' }, 'A'],
    ['http://127.0.0.1:{P}/mcp', { HTTP_PROXY: 'A', NO_PROXY: '127.0.0.1' }, 'direct'],
    ['http://127.0.0.1:{P}/mcp', { HTTP_PROXY: 'A', NO_PROXY: '.0.0.1' }, 'direct'],
    ['http://127.0.0.1:{P}/mcp', { HTTP_PROXY: 'A', NO_PROXY: 'localhost' }, 'A'],
  ];

  it.each(cases)('%s with %j goes to %s, as proxyFor says', async (target, rawEnv, expected) => {
    const fill = (text: string) => text.replaceAll('{P+1}', String(urls.port + 1)).replaceAll('{P}', String(urls.port));
    const env = Object.fromEntries(Object.entries(rawEnv).map(([name, value]) => [name, value === 'A' || value === 'B' ? urls[value] : fill(value)]));
    const url = new URL(fill(target));
    const before = { A: seen.A.length, B: seen.B.length };
    const dispatcher = createDispatcher({ connectTimeoutMs: 2_000, env, lookup: toLoopback });
    try {
      const exchange = await sendHttp(dispatcher, {
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        body: '{}',
        signal: new AbortController().signal,
      }).catch(() => undefined);
      if (exchange !== undefined) for await (const chunk of exchange.body) void chunk;
    } finally {
      await dispatcher.destroy();
    }
    const observed = seen.A.length > before.A ? 'A' : seen.B.length > before.B ? 'B' : 'direct';
    const decided = proxyFor(url, env);
    expect({ observed, decided: decided === undefined ? 'direct' : decided === urls.A ? 'A' : 'B' }).toEqual({ observed: expected, decided: expected });
  });
});
