import { describe, expect, it } from 'vitest';
import { BridgeError } from '../src/errors.js';
import { redactUserinfo, toBridgeError } from '../src/remote.js';

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
