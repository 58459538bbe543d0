import { describe, expect, it } from 'vitest';
import { chooseClientAuthMethod } from '../../../../src/credentials/oauth/client-auth-method.js';

describe('chooseClientAuthMethod', () => {
  it('uses client_secret_basic when the metadata names no methods (RFC 8414 §2 default) or lists it', () => {
    expect(chooseClientAuthMethod(undefined)).toBe('client_secret_basic');
    expect(chooseClientAuthMethod(['client_secret_post', 'client_secret_basic'])).toBe('client_secret_basic');
  });

  it('uses client_secret_post only when the metadata lists it and not client_secret_basic', () => {
    expect(chooseClientAuthMethod(['client_secret_post', 'private_key_jwt'])).toBe('client_secret_post');
  });

  it('falls back to client_secret_basic when neither secret method is listed (RFC 6749 §2.3.1: every server must take it)', () => {
    expect(chooseClientAuthMethod(['private_key_jwt'])).toBe('client_secret_basic');
  });
});
