import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/logging/redactor.js';
import { hintForStatus, looksLikeSseUrl, statusError } from '../../../src/http/status-errors.js';
import { type HttpExchange } from '../../../src/http/send.js';

const exchange = (status: number, headers: Record<string, string> = {}) => ({ status, headers, body: undefined }) as unknown as HttpExchange;
const context = (body: string, extra: Partial<Parameters<typeof statusError>[2]> = {}) => ({
  body,
  parsed: (() => {
    try {
      return JSON.parse(body) as unknown;
    } catch {
      return undefined;
    }
  })(),
  redact: createRedactor(['tok-secret-1']),
  tokenSource: 'env FENBS_TOKEN',
  tokenSet: true,
  hadSession: false,
  ...extra,
});

describe('statusError', () => {
  it('explains a 401 with the challenge and the variable to check', () => {
    const error = statusError('tools/call', exchange(401, { 'www-authenticate': 'Bearer error="invalid_token"' }), context('denied'));
    expect(error.code).toBe('REMOTE_AUTH');
    expect(error.context).toMatchObject({ status: 401, wwwAuthenticate: 'Bearer error="invalid_token"', bodyExcerpt: 'denied' });
    expect(error.context.hint).toMatch(/rejected or has expired: check env FENBS_TOKEN$/);
  });

  it('says when no token was set at all', () => {
    expect(statusError('x', exchange(401), context('', { tokenSet: false })).context.hint).toMatch(/no token is set/);
  });

  it('says a 401 with no token set is the server wanting one, naming the variable and the other ways to give it', () => {
    const error = statusError('tools/list', exchange(401), context('', { tokenSet: false, tokenSource: 'OAuth', tokenEnv: 'MY_TOKEN' }));
    expect(error.code).toBe('REMOTE_AUTH');
    expect(error.message).toBe('the server wants a token for tools/list (401 Unauthorized) and offers no OAuth sign-in');
    expect(error.context.hint).toBe('no token is set: set MY_TOKEN, --token-file or --token-command');
  });

  it('names the missing scope on a 403 insufficient_scope', () => {
    const error = statusError('x', exchange(403, { 'www-authenticate': 'Bearer error="insufficient_scope", scope="tasks:write"' }), context(''));
    expect(error.context.hint).toMatch(/scope/);
  });

  it('keeps an id-less JSON-RPC error from the server and masks the token in the excerpt', () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: tok-secret-1' } });
    const error = statusError('x', exchange(400), context(body));
    expect(error.context.serverError).toMatchObject({ code: -32000 });
    expect(error.context.bodyExcerpt).not.toContain('tok-secret-1');
  });

  it('flattens and shortens an HTML page to one excerpt line', () => {
    const page = `<html>\n<body>\n${'x'.repeat(2000)}</body></html>`;
    const excerpt = statusError('x', exchange(502), context(page)).context.bodyExcerpt!;
    expect(excerpt).not.toContain('\n');
    expect(excerpt.length).toBeLessThanOrEqual(501);
  });
});

describe('statusError for an /sse URL', () => {
  const sse = new URL('https://mcp.example.com/sse');

  it('recognises an HTTP+SSE URL refused under --transport streamable-http and names the two ways to reach it', () => {
    for (const status of [400, 404, 405]) {
      const error = statusError('initialize', exchange(status), context('Method Not Allowed', { url: sse, transport: 'streamable-http' }));
      expect(error.context.hint).toMatch(/looks like an HTTP\+SSE \(2024-11-05\) URL.*drop --transport \(auto falls back to it\) or pass --transport sse/);
      expect(error.context.hint).not.toMatch(/may not be an MCP endpoint/);
    }
  });

  it('says, under --transport auto, that the URL offered no event stream either', () => {
    const error = statusError('initialize', exchange(405), context('Method Not Allowed', { url: sse, transport: 'auto' }));
    expect(error.context.hint).toMatch(/looks like an HTTP\+SSE \(2024-11-05\) URL, but its GET did not open an event stream/);
  });

  it('keeps the generic hint for other paths and for server errors', () => {
    expect(statusError('initialize', exchange(405), context('', { url: new URL('https://x.example/mcp'), transport: 'streamable-http' })).context.hint).toBe(
      hintForStatus(405, false),
    );
    expect(statusError('initialize', exchange(500), context('', { url: sse, transport: 'streamable-http' })).context.hint).toBe(hintForStatus(500, false));
  });

  it('takes /sse and /sse/ in any case as an HTTP+SSE path, and nothing that merely contains it', () => {
    expect(['/sse', '/v1/SSE/', '/api/sse'].map((path) => looksLikeSseUrl(new URL(path, 'https://x.example')))).toEqual([true, true, true]);
    expect(['/sse/messages', '/assess', '/mcp'].map((path) => looksLikeSseUrl(new URL(path, 'https://x.example')))).toEqual([false, false, false]);
  });
});

describe('hintForStatus', () => {
  it.each([
    [404, false, /check --url/],
    [404, true, /session was not found/],
    [405, false, /does not accept POST/],
    [406, false, /not speak MCP Streamable HTTP/],
    [415, false, /not speak MCP Streamable HTTP/],
    [413, false, /too large/],
    [431, false, /headers are too large/],
    [429, false, /rate limited/],
    [500, false, /check its logs/],
    [502, false, /unavailable/],
    [503, false, /unavailable/],
    [504, false, /timed out/],
    [418, false, /bodyExcerpt/],
    [400, false, /malformed/],
    [408, false, /timed out/],
    [409, false, /conflict/],
    [599, false, /the server failed; retry later/],
  ])('gives %i (session: %s) a hint', (status, hadSession, hint) => {
    expect(hintForStatus(status, hadSession)).toMatch(hint);
  });
});
