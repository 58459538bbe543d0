import { describe, expect, it } from 'vitest';
import { createRedactor, maskUrl, MIN_MASKABLE_SECRET_CHARS } from '../src/secrets.js';

const TOKEN = 'tok/en-abcdef-123456';

describe('createRedactor: log text', () => {
  it('masks a secret as is, JSON-escaped and URL-encoded', () => {
    const redact = createRedactor([TOKEN]);
    expect(redact(`a ${TOKEN} b`)).toBe('a [REDACTED] b');
    expect(redact(`a ${encodeURIComponent(TOKEN)} b`)).toBe('a [REDACTED] b');
    expect(redact(`{"t":"${TOKEN.replaceAll('/', '\\/')}"}`)).toBe('{"t":"[REDACTED]"}');
  });
});

describe('createRedactor: maskMessageLine (stdout)', () => {
  const redact = createRedactor([TOKEN]);

  it('returns the very same value when no secret is present', () => {
    const bytes = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"text":"hello"}}');
    expect(redact.maskMessageLine(bytes)).toBe(bytes);
    const text = '{"jsonrpc":"2.0","id":1,"result":{}}';
    expect(redact.maskMessageLine(text)).toBe(text);
  });

  it('masks a token the server echoes in a string value, keeping the line valid JSON', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: `you sent Bearer ${TOKEN}` }] } });
    const masked = redact.maskMessageLine(Buffer.from(line));
    expect(JSON.parse(String(masked))).toEqual({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'you sent Bearer [REDACTED]' }] } });
  });

  it('masks a token escaped as \\/ (PHP json_encode) and a URL-encoded one', () => {
    const escaped = `{"jsonrpc":"2.0","id":1,"result":{"a":"${TOKEN.replaceAll('/', '\\/')}","b":"?t=${encodeURIComponent(TOKEN)}"}}`;
    const masked = String(redact.maskMessageLine(escaped));
    expect(masked).not.toContain('abcdef-123456');
    expect(JSON.parse(masked).result).toEqual({ a: '[REDACTED]', b: '?t=[REDACTED]' });
  });

  it('masks a token used as an object key', () => {
    const masked = String(redact.maskMessageLine(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { [TOKEN]: 1 } })));
    expect(JSON.parse(masked).result).toEqual({ '[REDACTED]': 1 });
  });

  it('never changes the top-level id, even when it holds the token', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: `req-${TOKEN}`, result: { text: TOKEN } });
    const masked = JSON.parse(String(redact.maskMessageLine(line)));
    expect(masked.id).toBe(`req-${TOKEN}`);
    expect(masked.result.text).toBe('[REDACTED]');
    const onlyId = JSON.stringify({ jsonrpc: '2.0', id: `req-${TOKEN}`, result: {} });
    expect(redact.maskMessageLine(onlyId)).toBe(onlyId);
  });

  it(`does not mask a token shorter than ${MIN_MASKABLE_SECRET_CHARS} characters, and reports it`, () => {
    const short = createRedactor(['test']);
    const line = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'latest-test-1', result: { tools: [{ name: 'test-tool' }] } }));
    expect(short.maskMessageLine(line)).toBe(line);
    expect(short.unmaskable).toBe(1);
    expect(createRedactor([TOKEN]).unmaskable).toBe(0);
  });

  it('keeps every byte outside a masked string: large integers, spacing, escapes', () => {
    const line = `{"jsonrpc":"2.0", "id":"a\\u0041", "result":{"n":12345678901234567890, "e":"\\u00e9", "t":"${TOKEN}"}}`;
    expect(redact.maskMessageLine(line)).toBe(`{"jsonrpc":"2.0", "id":"a\\u0041", "result":{"n":12345678901234567890, "e":"\\u00e9", "t":"[REDACTED]"}}`);
  });

  it('masks a string value "id" and a nested id, leaving only the top-level id alone', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { id: TOKEN, name: 'id', list: [{ id: `x${TOKEN}` }] } });
    expect(JSON.parse(String(redact.maskMessageLine(line))).result).toEqual({ id: '[REDACTED]', name: 'id', list: [{ id: 'x[REDACTED]' }] });
  });

  it('masks byte-literally a line that is not JSON', () => {
    expect(redact.maskMessageLine(`not json ${TOKEN}`)).toBe('not json [REDACTED]');
  });
});

describe('maskUrl', () => {
  it('masks user info and query values, keeps the rest', () => {
    expect(maskUrl('https://user:pw@example.com/mcp?api_key=abc123&team=x#frag')).toBe('https://***:***@example.com/mcp?api_key=***&team=***#***');
    expect(maskUrl(new URL('https://example.com/mcp'))).toBe('https://example.com/mcp');
  });

  it('masks user info and query values in text that is not a URL', () => {
    const masked = maskUrl('https://user:s3cret@exa mple.com/mcp?api_key=abc 123');
    expect(masked).not.toContain('s3cret');
    expect(masked).not.toContain('abc');
    expect(masked).toContain('exa mple.com/mcp?api_key=***');
  });

  it('keeps a query flag without a value, and masks a lone user name and the fragment', () => {
    expect(maskUrl('https://user@example.com/mcp?debug&key=v')).toBe('https://***@example.com/mcp?debug&key=***');
    expect(maskUrl('https://example.com/mcp#access_token=abc')).toBe('https://example.com/mcp#***');
  });

  it('masks a lone user name, a bare flag and the fragment in text that is not a URL', () => {
    // The masked fragment is folded into the last query value's mask: nothing of either is shown.
    expect(maskUrl('https://user@exa mple.com/mcp?debug&key=v#frag')).toBe('https://***@exa mple.com/mcp?debug&key=***');
    expect(maskUrl('https://exa mple.com/mcp#frag')).toBe('https://exa mple.com/mcp#***');
  });
});

describe('createRedactor: secrets learned at run time', () => {
  it('masks a secret added later in log text and in stdout lines, from then on', () => {
    const redact = createRedactor([]);
    const learned = 'learned-at-run-time-token';
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: `got ${learned}` } });
    expect(redact.maskMessageLine(line)).toBe(line);
    expect(redact.add(learned)).toBe(true);
    expect(redact(`log ${learned}`)).toBe('log [REDACTED]');
    expect(JSON.parse(String(redact.maskMessageLine(Buffer.from(line)))).result.text).toBe('got [REDACTED]');
  });

  it('keeps the secrets it had, and masks a longer added secret whole', () => {
    const redact = createRedactor([TOKEN]);
    redact.add(`${TOKEN}-rotated`);
    expect(redact(`a ${TOKEN} b ${TOKEN}-rotated`)).toBe('a [REDACTED] b [REDACTED]');
  });

  it(`says when an added secret is shorter than ${MIN_MASKABLE_SECRET_CHARS} characters, and counts it as unmaskable`, () => {
    const redact = createRedactor([]);
    expect(redact.add('short')).toBe(false);
    expect(redact.unmaskable).toBe(1);
    expect(redact('a short b')).toBe('a [REDACTED] b'); // still masked in logs
  });

  it('changes nothing when the secret is known already or empty', () => {
    const redact = createRedactor([TOKEN]);
    expect(redact.add(TOKEN)).toBe(true);
    expect(redact.add('')).toBe(false);
    expect(redact.unmaskable).toBe(0);
    expect(redact('nothing secret here')).toBe('nothing secret here');
  });
});
