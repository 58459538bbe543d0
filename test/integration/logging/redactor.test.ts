import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { basicCredentialOf, createRedactor, maskUrl, MIN_MASKABLE_SECRET_CHARS } from '../../../src/logging/redactor.js';
import { startMcpServer } from '../../helpers/hardening-servers.js';
import { startInProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TOKEN = 'tok/en-abcdef-123456';

describe('createRedactor: log text', () => {
  it('masks a secret as is, JSON-escaped and URL-encoded', () => {
    const redact = createRedactor([TOKEN]);
    expect(redact(`a ${TOKEN} b`)).toBe('a [REDACTED] b');
    expect(redact(`a ${encodeURIComponent(TOKEN)} b`)).toBe('a [REDACTED] b');
    expect(redact(`{"t":"${TOKEN.replaceAll('/', '\\/')}"}`)).toBe('{"t":"[REDACTED]"}');
  });
});

describe('createRedactor: the spellings of a secret on the wire', () => {
  // Azure-style client secrets carry ~ and .; form bodies write ~ as %7E (WHATWG urlencoded).
  const SECRET = 'Qx8~Q_abc.def~ghi-jkl mno*';

  it('masks it form-encoded (URLSearchParams), strictly form-encoded (client_secret_basic), percent-encoded with lower-case hex', () => {
    const redact = createRedactor([SECRET]);
    const form = new URLSearchParams({ client_secret: SECRET }).toString();
    expect(form).toContain('%7E');
    expect(redact(`body ${form}`)).toBe('body client_secret=[REDACTED]');
    const strict = encodeURIComponent(SECRET).replace(/[-_.!~*'()]|%20/g, (part) =>
      part === '%20' ? '+' : `%${part.charCodeAt(0).toString(16).toUpperCase()}`,
    );
    expect(redact(`got ${strict}`)).toBe('got [REDACTED]');
    expect(redact(`got ${encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())}`)).toBe('got [REDACTED]');
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -1, message: `you sent ${form}` } });
    expect(JSON.parse(String(redact.maskMessageLine(line))).error.message).toBe('you sent client_secret=[REDACTED]');
  });

  it('masks the client_secret_basic credential, base64 of the form-encoded id and secret, once it is known', () => {
    const redact = createRedactor([SECRET]);
    const basic = basicCredentialOf('client:1', SECRET);
    expect(Buffer.from(basic, 'base64').toString()).toBe(
      `client%3A1:${SECRET.replaceAll('~', '%7E').replaceAll('_', '%5F').replaceAll('.', '%2E').replaceAll('-', '%2D').replaceAll(' ', '+').replaceAll('*', '%2A')}`,
    );
    redact.add(basic);
    expect(redact(`authorization: Basic ${basic}`)).toBe('authorization: Basic [REDACTED]');
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { headers: { authorization: `Basic ${basic}` } } });
    expect(JSON.parse(String(redact.maskMessageLine(Buffer.from(line)))).result.headers.authorization).toBe('Basic [REDACTED]');
  });

  it('keeps a JSON log line valid when a secret is spelled from inside an escape (\\u0030 for a leading 0)', () => {
    const redact = createRedactor(['0f,x/u00a']);
    expect(redact('{"k":"\\u0030f,x/u00a"}')).toBe('{"k":"[REDACTED]"}');
    // Its characters in the escape's own hex digits: not a value anywhere, but shown, so masked as text.
    const hex = createRedactor(['30f,x/u00a']);
    expect(hex('{"k":"\\u0030f,x/u00a"}')).not.toContain('30f,x/u00a');
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

  it('masks the token in the top-level id, in a duplicate id key and in the id of a server request', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: `req-${TOKEN}`, result: { text: TOKEN } });
    const masked = JSON.parse(String(redact.maskMessageLine(line)));
    expect(masked.id).toBe('req-[REDACTED]');
    expect(masked.result.text).toBe('[REDACTED]');
    // A duplicate key: a client's parser may keep the first, JSON.parse keeps the last.
    const duplicate = `{"jsonrpc":"2.0","id":"${TOKEN}","id":1,"result":{}}`;
    expect(String(redact.maskMessageLine(duplicate))).toBe('{"jsonrpc":"2.0","id":"[REDACTED]","id":1,"result":{}}');
    const serverRequest = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: TOKEN, method: 'roots/list' }));
    expect(String(redact.maskMessageLine(serverRequest))).toBe('{"jsonrpc":"2.0","id":"[REDACTED]","method":"roots/list"}');
  });

  it("keeps the client's own id in a response whole, and masks an id the server chose", () => {
    const own = `req-${TOKEN}`;
    const response = JSON.stringify({ jsonrpc: '2.0', id: own, result: { text: TOKEN } });
    const kept = JSON.parse(String(redact.maskMessageLine(response, (id) => id === own)));
    expect(kept).toEqual({ jsonrpc: '2.0', id: own, result: { text: '[REDACTED]' } });
    // A nested "id" or a duplicate that is not the client's is masked all the same.
    const duplicate = `{"jsonrpc":"2.0","id":"${own}","result":{"id":"${TOKEN}"},"id":"x-${TOKEN}"}`;
    expect(String(redact.maskMessageLine(duplicate, (id) => id === own))).toBe(
      `{"jsonrpc":"2.0","id":"${own}","result":{"id":"[REDACTED]"},"id":"x-[REDACTED]"}`,
    );
  });

  it('keeps an id that holds no secret byte for byte, in a line that is masked elsewhere', () => {
    const line = `{"jsonrpc":"2.0","id":"a\\u0041 9007199254740993","result":{"text":"${TOKEN}"}}`;
    expect(String(redact.maskMessageLine(line))).toBe('{"jsonrpc":"2.0","id":"a\\u0041 9007199254740993","result":{"text":"[REDACTED]"}}');
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

  it('masks a string value "id" and a nested id', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { id: TOKEN, name: 'id', list: [{ id: `x${TOKEN}` }] } });
    expect(JSON.parse(String(redact.maskMessageLine(line))).result).toEqual({ id: '[REDACTED]', name: 'id', list: [{ id: 'x[REDACTED]' }] });
  });

  it('masks byte-literally a line that is not JSON', () => {
    expect(redact.maskMessageLine(`not json ${TOKEN}`)).toBe('not json [REDACTED]');
  });
});

/** JSON text as Go's encoding/json writes it by default: <, > and & as \\u003c, \\u003e, \\u0026. */
const goJson = (value: unknown) => JSON.stringify(value).replace(/[<>&]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
/** Every UTF-16 unit of `text` as \\uXXXX, the hex in `upper` or lower case. */
const fullyEscaped = (text: string, upper = false) =>
  [...Array(text.length).keys()]
    .map((i) => `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`)
    .map((escape) => (upper ? escape.toUpperCase().replace('\\U', '\\u') : escape))
    .join('');
/** Whether `text`, or `text` read once more as the inside of a JSON string, shows `secret`. */
const shows = (text: string, secret: string) => {
  let again = text;
  try {
    again = JSON.parse(`"${text}"`) as string;
  } catch {
    // not the inside of a JSON string
  }
  return text.includes(secret) || again.includes(secret);
};

describe('createRedactor: every JSON spelling of a secret', () => {
  const HEADER_SECRET = 'team-key&<a>/b"c\\d';
  const redact = createRedactor([HEADER_SECRET]);
  const textOf = (line: string | Buffer) => (JSON.parse(String(line)) as { result: { text: string } }).result.text;

  it.each([
    ['with & < > as \\u escapes (Go encoding/json)', goJson({ jsonrpc: '2.0', id: 1, result: { text: `echo ${HEADER_SECRET} end` } })],
    ['wholly as lower-case \\u escapes', `{"jsonrpc":"2.0","id":1,"result":{"text":"echo ${fullyEscaped(HEADER_SECRET)} end"}}`],
    ['wholly as upper-case \\u escapes', `{"jsonrpc":"2.0","id":1,"result":{"text":"echo ${fullyEscaped(HEADER_SECRET, true)} end"}}`],
    [
      'with / as \\/ and the rest as is',
      `{"jsonrpc":"2.0","id":1,"result":{"text":"echo ${JSON.stringify(HEADER_SECRET).slice(1, -1).replace('/', '\\/')} end"}}`,
    ],
    [
      'half escaped, half not',
      `{"jsonrpc":"2.0","id":1,"result":{"text":"echo ${fullyEscaped(HEADER_SECRET.slice(0, 6))}${JSON.stringify(HEADER_SECRET.slice(6)).slice(1, -1)} end"}}`,
    ],
  ])('masks it on stdout when the server spells it %s', (_title, line) => {
    expect(textOf(line)).toContain(HEADER_SECRET); // the client's parser would read the secret
    for (const given of [line, Buffer.from(line)]) {
      const masked = redact.maskMessageLine(given);
      expect(textOf(masked)).toBe('echo [REDACTED] end');
    }
  });

  it('masks a secret with two slashes, one written as \\/ and one not, in text and bytes', () => {
    const slashes = createRedactor(['key/one/two-3456']);
    const line = '{"jsonrpc":"2.0","id":1,"result":{"text":"echo key\\/one/two-3456 end"}}';
    for (const given of [line, Buffer.from(line)]) expect(textOf(slashes.maskMessageLine(given))).toBe('echo [REDACTED] end');
    const other = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"text":"a\\/b\\nc"}}');
    expect(slashes.maskMessageLine(other)).toBe(other);
  });

  it('masks it in JSON text inside a string (a tool result holding the JSON a Go server made)', () => {
    const inner = goJson({ headers: { 'X-Team-Key': HEADER_SECRET } });
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: inner } });
    expect(line).toContain('\\\\u0026');
    const text = textOf(redact.maskMessageLine(line));
    expect(JSON.parse(text)).toEqual({ headers: { 'X-Team-Key': '[REDACTED]' } });
  });

  it('masks it in JSON text inside a string that spells it with the shortest escapes only', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: JSON.stringify({ k: HEADER_SECRET }) } });
    expect(JSON.parse(textOf(redact.maskMessageLine(line)))).toEqual({ k: '[REDACTED]' });
  });

  it('masks it in log text, where a body excerpt spelled it with \\u escapes and the log line escaped that again', () => {
    const excerpt = goJson({ error: `bad key ${HEADER_SECRET}` });
    expect(redact(`body ${excerpt}`)).toBe('body {"error":"bad key [REDACTED]"}');
    const logLine = JSON.stringify({ level: 40, msg: 'remote failed', bodyExcerpt: excerpt });
    const masked = redact(logLine);
    expect(shows(JSON.parse(masked).bodyExcerpt, HEADER_SECRET)).toBe(false);
    expect(JSON.parse(masked).bodyExcerpt).toBe('{"error":"bad key [REDACTED]"}');
  });

  it('leaves a line with \\u escapes and no secret as the very same value', () => {
    const line = goJson({ jsonrpc: '2.0', id: 1, result: { text: 'caf\u00e9 <b> & \\/ nothing' } });
    expect(redact.maskMessageLine(line)).toBe(line);
    const bytes = Buffer.from(line);
    expect(redact.maskMessageLine(bytes)).toBe(bytes);
  });

  it('masks any spelling a JSON encoder may give a random secret, once or twice over, on stdout and in logs', () => {
    const unit = fc.oneof(
      fc.constantFrom('&', '<', '>', '/', '"', '\\', '\t', 'é', 'ÿ', ' ', 'u', '0', 'a', 'F'),
      fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }),
    );
    const secret = fc.string({ unit, minLength: MIN_MASKABLE_SECRET_CHARS, maxLength: 24 }).filter((text) => text.trim() === text);
    /** One JSON spelling of `text`: per unit, raw where JSON allows it, its short escape, or \\uXXXX in either case. */
    const spelling = (text: string) =>
      fc.array(fc.nat(3), { minLength: text.length, maxLength: text.length }).map((choices) =>
        [...Array(text.length).keys()]
          .map((i) => {
            const char = text.charAt(i);
            const canonical = JSON.stringify(char).slice(1, -1);
            const hex = char.charCodeAt(0).toString(16).padStart(4, '0');
            return [canonical, `\\u${hex}`, `\\u${hex.toUpperCase()}`, char === '/' ? '\\/' : canonical][choices[i]!]!;
          })
          .join(''),
      );
    // The shortest escapes alone (JSON.stringify's own spelling) now and then, beside the mixes.
    const inner = (value: string) => fc.oneof(spelling(value), fc.constant(JSON.stringify(value).slice(1, -1)));
    const spelled = secret.chain((value) => fc.tuple(fc.constant(value), spelling(value), inner(value), fc.boolean()));
    fc.assert(
      fc.property(spelled, ([value, once, inner, asBuffer]) => {
        const redactor = createRedactor([value]);
        // Once: as the server writes the string value of a reply.
        const line = `{"jsonrpc":"2.0","id":1,"result":{"text":"x ${once} y","n":1}}`;
        expect(JSON.parse(line).result.text).toBe(`x ${value} y`);
        const masked = JSON.parse(String(redactor.maskMessageLine(asBuffer ? Buffer.from(line) : line)));
        expect(masked.result.text).toBe('x [REDACTED] y');
        // Twice: JSON text that spells it, inside a string value, and in a log line.
        const nested = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: `{"k":"${inner}"}` } });
        const nestedText = JSON.parse(String(redactor.maskMessageLine(nested))).result.text as string;
        expect(shows(JSON.parse(nestedText).k, value)).toBe(false);
        const logged = JSON.parse(redactor(JSON.stringify({ msg: 'failed', bodyExcerpt: `{"k":"${inner}"}` }))).bodyExcerpt as string;
        expect(shows(logged, value)).toBe(false);
        expect(shows(JSON.parse(redactor(`{"k":"${once}"}`)).k, value)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('masks a -H secret a server echoes with \\u escapes in a reply through the bridge, on stdout', async () => {
    const secret = 'sk-team&key<42>';
    const server = await startMcpServer({
      route: ({ res, message, req }) => {
        if (message?.method !== 'tools/call') return false;
        // A Go server echoing the request's headers: encoding/json writes & < > as \\u escapes.
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(goJson({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: `you sent ${String(req.headers['x-team-key'])}` }] } }));
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url.href, '-H', 'X-Team-Key: ${TEAM_KEY}'], { TEAM_KEY: secret });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    await bridge.reply('init');
    bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: {} } });
    const reply = await bridge.reply('call');
    expect(reply.result.content[0].text).toBe('you sent [REDACTED]');
    expect(bridge.lines.join('\n')).not.toMatch(/sk-team|key\\u003c42/);
  });
});

describe('createRedactor: a line built to make masking slow', () => {
  it('masks a line of 400,000 short strings and one late escape in one pass, not one search per string', () => {
    const secret = 'sk-many-strings-secret';
    const items = Array.from({ length: 400_000 }, (_, i) => `"k${i}"`).join(',');
    const line = `{"jsonrpc":"2.0","id":1,"result":{"s":"${secret}","a":[${items}],"z":"tail\\n"}}`;
    const started = performance.now();
    const masked = createRedactor([secret]).maskMessageLine(line) as string;
    // A bound on how long the event loop is blocked, not a speed figure: a search from each string
    // to the late backslash took about 10 s here; one pass takes a fraction of a second.
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(masked).not.toContain(secret);
    expect(masked.endsWith('"z":"tail\\n"}}')).toBe(true);
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
