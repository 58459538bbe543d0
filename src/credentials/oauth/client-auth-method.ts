// Which client authentication a confidential client uses at the token endpoint, from the server's metadata.

/** The client authentication method the token request uses, as RFC 7591 §2 names it. */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post';

/**
 * RFC 6749 §2.3.1: every server must take HTTP Basic, so it is preferred; the form body only when
 * the metadata lists client_secret_post and not client_secret_basic (RFC 8414 §2: absent means basic).
 */
export function chooseClientAuthMethod(supported: readonly string[] | undefined): ClientAuthMethod {
  return supported !== undefined && !supported.includes('client_secret_basic') && supported.includes('client_secret_post')
    ? 'client_secret_post'
    : 'client_secret_basic';
}
