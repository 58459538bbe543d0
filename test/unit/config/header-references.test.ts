// In-process: ${VAR} in -H values, expanded from the environment, and which Authorization values may come from it.

import { describe, expect, it } from 'vitest';
import { bearerTokenOf, expandHeaderValue, isAuthorizationFromReference } from '../../../src/config/header-references.js';

describe('expandHeaderValue', () => {
  it('replaces each ${NAME} by its value from the environment and reports the values as secrets', () => {
    expect(expandHeaderValue('id=${ID}; key=${KEY}', { ID: 'team-1', KEY: 'k-2' })).toEqual({
      kind: 'expanded',
      value: 'id=team-1; key=k-2',
      secrets: ['team-1', 'k-2'],
      variables: ['ID', 'KEY'],
    });
  });

  it('leaves a value without references, and a $ not followed by {, as written', () => {
    expect(expandHeaderValue('price $5 and $HOME', { HOME: '/root' })).toEqual({ kind: 'expanded', value: 'price $5 and $HOME', secrets: [], variables: [] });
  });

  it('names a referenced variable that is unset or empty', () => {
    expect(expandHeaderValue('${MISSING}', {})).toEqual({ kind: 'unset', variable: 'MISSING' });
    expect(expandHeaderValue('a ${EMPTY}', { EMPTY: '' })).toEqual({ kind: 'unset', variable: 'EMPTY' });
  });

  it('refuses a reference that is not a variable name', () => {
    expect(expandHeaderValue('${1ABC}', { '1ABC': 'x' })).toEqual({ kind: 'bad-reference', reference: '${1ABC}' });
    expect(expandHeaderValue('${}', {})).toEqual({ kind: 'bad-reference', reference: '${}' });
  });

  it('does not expand a reference inside a value taken from the environment', () => {
    expect(expandHeaderValue('${A}', { A: '${B}', B: 'b' })).toMatchObject({ value: '${B}' });
  });
});

describe('isAuthorizationFromReference', () => {
  it.each(['${TOKEN}', 'Bearer ${TOKEN}', 'token ${GH_TOKEN}', 'Basic ${BASIC_CREDENTIALS}'])('accepts %s', (value) => {
    expect(isAuthorizationFromReference(value)).toBe(true);
  });

  it.each(['Bearer abc', 'Bearer abc${TOKEN}', 'Bearer ${TOKEN}x', 'Bearer ${A}${B}', 'Bearer', ''])(
    'refuses %s: a credential written on the command line',
    (value) => {
      expect(isAuthorizationFromReference(value)).toBe(false);
    },
  );
});

describe('bearerTokenOf', () => {
  // RFC 6750 §2.1 ("Bearer" 1*SP b64token); auth schemes are case-insensitive (RFC 9110 §11.1).
  it('gives what follows the Bearer scheme, in any case, and nothing for another scheme', () => {
    expect(bearerTokenOf('Bearer abc')).toBe('abc');
    expect(bearerTokenOf('bearer  abc def')).toBe('abc def');
    expect(bearerTokenOf('BEARER')).toBe('');
    expect(bearerTokenOf('token abc')).toBeUndefined();
    expect(bearerTokenOf('Bearerabc')).toBeUndefined();
  });
});
