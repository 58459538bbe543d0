import { describe, expect, it } from 'vitest';
import { readTokenType, withBearerDefault } from '../../../../src/credentials/oauth/token-type.js';

describe('readTokenType', () => {
  it('reads a missing, null or empty token_type as Bearer, and says it was defaulted', () => {
    for (const value of [undefined, null, '']) expect(readTokenType(value)).toEqual({ kind: 'bearer', defaulted: true });
  });

  it('reads Bearer in any case as Bearer (RFC 6749 §5.1: case-insensitive)', () => {
    for (const value of ['Bearer', 'bearer', 'BEARER']) expect(readTokenType(value)).toEqual({ kind: 'bearer', defaulted: false });
  });

  it('refuses every named type that is not Bearer, and a token_type that is not a string', () => {
    expect(readTokenType('DPoP')).toEqual({ kind: 'refused', type: 'DPoP' });
    expect(readTokenType('mac')).toEqual({ kind: 'refused', type: 'mac' });
    expect(readTokenType(7)).toEqual({ kind: 'refused', type: '7' });
  });
});

describe('withBearerDefault', () => {
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

  it('adds token_type Bearer to a successful token response that has none, keeping the rest', async () => {
    const patched = await withBearerDefault(json({ access_token: 'a', expires_in: 60 }));
    expect(await patched.json()).toEqual({ access_token: 'a', expires_in: 60, token_type: 'Bearer' });
    expect(patched.headers.get('content-type')).toBe('application/json');
  });

  it('hands on a response that names its type, and an error response, unchanged', async () => {
    expect(await (await withBearerDefault(json({ access_token: 'a', token_type: 'DPoP' }))).json()).toEqual({ access_token: 'a', token_type: 'DPoP' });
    const error = json({ error: 'invalid_client' }, 401);
    expect(await withBearerDefault(error)).toBe(error);
    expect(await (await withBearerDefault(new Response('not json', { status: 200 }))).text()).toBe('not json');
  });
});
