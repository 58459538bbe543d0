import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createTestCertificates } from '../../helpers/hardening-servers.js';
import { createConfig, MAX_LINE_BYTES, MAX_TIMEOUT_MS, MAX_TOKEN_FILE_BYTES, REQUEST_TIMEOUT_MS, type RawOptions } from '../../../src/config/config.js';
import { FileTooLargeError } from '../../../src/config/option-files.js';
import { UsageError } from '../../../src/core/errors.js';

const noFile = () => {
  throw new Error('ENOENT: no such file');
};
const make = (options: RawOptions = {}, env: Record<string, string> = {}, readTextFile: (path: string, maxBytes: number) => string = noFile) =>
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

  it('chooses the credential in order: env token, --token-file, --token-command, naming the ones it leaves', () => {
    expect(make({ tokenFile: '/t', tokenCommand: 'op read x' }, { FENBS_TOKEN: 'tok-env' }, () => 'tok-file').credential).toEqual({
      kind: 'static',
      source: 'env FENBS_TOKEN',
      authorization: 'Bearer tok-env',
      ignored: ['file /t', '--token-command'],
    });
    expect(make({ tokenFile: '/t', tokenCommand: 'op read x' }, {}, () => 'tok-file').credential).toMatchObject({
      kind: 'static',
      source: 'file /t',
      ignored: ['--token-command'],
    });
    expect(make({ tokenCommand: ' op read x ' }).credential).toEqual({ kind: 'command', source: '--token-command', command: 'op read x', ignored: [] });
    expect(make({}).credential).toEqual({ kind: 'none', source: 'none', ignored: [] });
  });

  it('expands ${VAR} in -H values and keeps the values as secrets', () => {
    const config = make({ header: ['X-Api-Key: ${MY_KEY}', 'X-Team: platform'] }, { MY_KEY: 'key-from-env' });
    expect(config.extraHeaders).toEqual([
      ['X-Api-Key', 'key-from-env'],
      ['X-Team', 'platform'],
    ]);
    expect(config.headerSecrets).toEqual([{ header: 'X-Api-Key', variable: 'MY_KEY', value: 'key-from-env' }]);
  });

  it('takes -H Authorization from the environment as the credential, out of the extra headers', () => {
    const config = make({ header: ['Authorization: token ${GH_TOKEN}'] }, { GH_TOKEN: 'gh-value' });
    expect(config.credential).toEqual({ kind: 'static', source: '-H Authorization from $GH_TOKEN', authorization: 'token gh-value', ignored: [] });
    expect(config.extraHeaders).toEqual([]);
    expect(config.headerSecrets).toEqual([{ header: 'Authorization', variable: 'GH_TOKEN', value: 'gh-value' }]);
  });

  it('refuses to send a credential or a -H secret from the environment over plain http to a remote host', () => {
    expect(() => make({ url: 'http://example.invalid/mcp', tokenCommand: 'op read x' })).toThrow(/plain http/);
    expect(() => make({ url: 'http://example.invalid/mcp', header: ['Authorization: Bearer ${T}'] }, { T: 'tok' })).toThrow(/plain http/);
    expect(() => make({ url: 'http://example.invalid/mcp', header: ['X-Api-Key: ${K}'] }, { K: 'key' })).toThrow(
      /refusing to send the -H values taken from the environment over plain http/,
    );
    expect(make({ url: 'http://example.invalid/mcp', header: ['X-Team: platform'] }).url.protocol).toBe('http:');
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
    ['a -H value naming an unset variable', { header: ['X-Api-Key: ${UNSET_KEY}'] }, {}, /UNSET_KEY is not set/],
    [
      'a -H value whose expansion holds a line break',
      { header: ['X-Api-Key: ${BROKEN}'] },
      { BROKEN: 'a\nb' },
      /after expanding \$BROKEN\) contains a line break/,
    ],
    ['-H Authorization given twice', { header: ['Authorization: Bearer ${A}', 'authorization: Bearer ${A}'] }, { A: 'tok-a' }, /more than once/],
    [
      '-H Authorization with --token-command',
      { header: ['Authorization: Bearer ${A}'], tokenCommand: 'op read x' },
      { A: 'tok-a' },
      /cannot be combined with --token-command/,
    ],
    ['-H Cookie even from the environment', { header: ['Cookie: ${A}'] }, { A: 'tok-a' }, /refused/],
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

/** The message of the UsageError `run` throws (fails the test when it does not throw one). */
function usageMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return `${(error as UsageError).message} ${(error as UsageError).fix ?? ''}`;
  }
  throw new Error('no UsageError');
}

describe('createConfig: start-up limits', () => {
  it.each(['--request-timeout', '--stream-idle-timeout', '--connect-timeout'])('refuses %s of 2^31 ms or more, naming the maximum', (option) => {
    const key = { '--request-timeout': 'requestTimeout', '--stream-idle-timeout': 'streamIdleTimeout', '--connect-timeout': 'connectTimeout' }[option]!;
    const message = usageMessage(() => make({ [key]: String(2 ** 31) }));
    expect(message).toContain(option);
    expect(message).toContain(String(MAX_TIMEOUT_MS));
    if (option !== '--connect-timeout') expect(message).toMatch(/0 means no deadline/);
  });

  it('accepts the maximum timer itself', () => {
    expect(make({ requestTimeout: String(MAX_TIMEOUT_MS), streamIdleTimeout: String(MAX_TIMEOUT_MS) }).requestTimeoutMs).toBe(MAX_TIMEOUT_MS);
  });

  it('refuses an empty token file instead of warning that the file "is not set"', () => {
    expect(usageMessage(() => make({ tokenFile: '/t' }, {}, () => ' \n'))).toMatch(/--token-file \/t is empty/);
  });

  it('reads a token file through a reader bounded to MAX_TOKEN_FILE_BYTES, and refuses a larger one', () => {
    let limit = 0;
    make({ tokenFile: '/t' }, {}, (_path, maxBytes) => ((limit = maxBytes), 'tok-file'));
    expect(limit).toBe(MAX_TOKEN_FILE_BYTES);
    const tooLarge = () => {
      throw new FileTooLargeError('/t', MAX_TOKEN_FILE_BYTES);
    };
    expect(usageMessage(() => make({ tokenFile: '/t' }, {}, tooLarge))).toMatch(/larger than 65536 bytes/);
  });

  it.each([
    ['a control character', 'tok\u0007en-123'],
    ['DEL', 'tok\u007Fen-123'],
    ['a character outside Latin-1', 'tok€en-123'],
    ['a line break', 'tok\nen-123'],
    ['a carriage return', 'tok\ren-123'],
  ])('refuses a token with %s, without repeating it', (_title, token) => {
    const message = usageMessage(() => make({}, { FENBS_TOKEN: token }));
    expect(message).toMatch(/token from env FENBS_TOKEN/);
    expect(message).not.toContain('en-123');
  });

  // RFC 6750 §2.1: "Bearer" 1*SP b64token, and a b64token holds no white space.
  it.each([
    ['env FENBS_TOKEN', {}, { FENBS_TOKEN: 'Bearer env-token-2525' }],
    ['env OTHER_TOKEN', { tokenEnv: 'OTHER_TOKEN' }, { OTHER_TOKEN: ' bearer\tenv-token-2525 ' }],
    ['file /t', { tokenFile: '/t' }, {}],
    ['-H Authorization from $HEADER_TOKEN', { header: ['Authorization: Bearer ${HEADER_TOKEN}'] }, { HEADER_TOKEN: 'Bearer env-token-2525' }],
    ['-H Authorization from $WHOLE_VALUE', { header: ['Authorization: ${WHOLE_VALUE}'] }, { WHOLE_VALUE: 'Bearer Bearer env-token-2525' }],
  ])('refuses a token from %s given with "Bearer " in front, naming its source and the fix, not the token', (source, options, env) => {
    const message = usageMessage(() => make(options, env, () => 'Bearer env-token-2525\n'));
    expect(message).toContain(`the token from ${source} contains a space or a tab, so it cannot be sent in an Authorization header`);
    expect(message).toMatch(/give the token alone, without "Bearer " in front/);
    expect(message).not.toContain('env-token-2525');
  });

  it('refuses a -H Authorization: Bearer token from the environment that holds a space, or nothing after the scheme', () => {
    const spaced = usageMessage(() => make({ header: ['Authorization: Bearer ${SPACED}'] }, { SPACED: 'two words-2626' }));
    expect(spaced).toMatch(/the token from -H Authorization from \$SPACED contains a space or a tab/);
    expect(spaced).not.toMatch(/words-2626|Bearer " in front/);
    expect(usageMessage(() => make({ header: ['Authorization: ${SCHEME_ONLY}'] }, { SCHEME_ONLY: 'Bearer' }))).toMatch(/contains nothing \(it is empty\)/);
    // Another scheme keeps its own syntax (RFC 9110 §11.4 allows auth-params with spaces).
    expect(make({ header: ['Authorization: Digest ${DIGEST}'] }, { DIGEST: 'username="a", realm="b"' }).credential).toMatchObject({
      authorization: 'Digest username="a", realm="b"',
    });
    expect(make({ header: ['Authorization: ${WHOLE}'] }, { WHOLE: 'bearer whole-value-2626' }).credential).toMatchObject({
      authorization: 'bearer whole-value-2626',
    });
  });

  it.each([
    ['a character outside Latin-1', 'X-Team: caf€'],
    ['a control character', 'X-Team: a\u0001b'],
    ['DEL', 'X-Team: a\u007Fb'],
  ])('refuses a -H value with %s, naming the header but not the value', (_title, header) => {
    const message = usageMessage(() => make({ header: [header] }));
    expect(message).toContain('X-Team');
    expect(message).not.toMatch(/caf|a.b/);
  });

  it('keeps Latin-1 and tabs in a -H value, as HTTP allows (RFC 9110 §5.5)', () => {
    expect(make({ header: ['X-Team: café\tbar'] }).extraHeaders).toEqual([['X-Team', 'café\tbar']]);
  });

  it('never echoes a -H without a colon, which may be a credential', () => {
    const message = usageMessage(() => make({ header: ['Authorization Bearer sekrit-value-1'] }));
    expect(message).not.toContain('sekrit-value-1');
    expect(message).toMatch(/Name: value/);
  });

  it('never echoes the user info or query values of an unparseable URL', () => {
    const message = usageMessage(() => make({ url: 'https://user:pa55word@exa mple.com/mcp?api_key=k3y-value' }));
    expect(message).toMatch(/invalid URL/);
    expect(message).not.toContain('pa55word');
    expect(message).not.toContain('k3y-value');
  });

  it('refuses a --ca-file whose PEM block holds no certificate', () => {
    const garbage = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
    expect(usageMessage(() => make({ caFile: '/ca.pem' }, {}, () => garbage))).toMatch(/--ca-file \/ca.pem holds no usable certificate/);
  });

  it('accepts a --ca-file with a real certificate', () => {
    const { caFile } = createTestCertificates();
    expect(make({ caFile }, {}, (path) => readFileSync(path, 'utf8')).caFile).toBe(caFile);
  });
});

describe('createConfig: -H names undici refuses to send', () => {
  it.each(['Expect', 'Upgrade', 'Keep-Alive', 'transfer-encoding', 'Content-Length'])(
    'refuses -H %s at start, naming the header and why every request would fail',
    (name) => {
      const message = usageMessage(() => make({ header: [`${name}: 1`] }));
      expect(message).toContain(`-H ${name} is refused: undici`);
      expect(message).toMatch(/every request carrying it would fail/);
    },
  );
});

describe('proxy settings', () => {
  it.each(['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'])('refuses %s that is not a URL, naming the variable and masking a password', (name) => {
    const env = { FENBS_TOKEN: 'token-value-123', [name]: 'user:proxy-secret@not a proxy url' };
    expect(() => createConfig({ options: { url: 'https://example.com/mcp' }, env, readTextFile: () => '' })).toThrow(
      new RegExp(`^${name} is not an http:// or https:// proxy URL$`),
    );
    try {
      createConfig({ options: { url: 'https://example.com/mcp' }, env, readTextFile: () => '' });
    } catch (error) {
      expect((error as Error).message).not.toContain('proxy-secret');
    }
  });
});
