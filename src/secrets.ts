// Knows the secret values of this run and blanks them out of any text before it leaves the process.

const MASK = '[REDACTED]';

/** Header names whose values are credentials, whatever the value looks like. */
export const SECRET_HEADER_NAMES = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie'] as const;

export type Redactor = (text: string) => string;

/**
 * Returns a function that replaces every occurrence of each secret (raw, JSON-escaped, and as
 * it appears inside a Base64 Basic credential is not attempted: we never build one) with a mask.
 * Secrets shorter than 4 characters are ignored: masking "a" would shred every log line while
 * protecting nothing.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const needles = new Set<string>();
  for (const secret of secrets) {
    if (secret === undefined || secret.length < 4) continue;
    needles.add(secret);
    needles.add(JSON.stringify(secret).slice(1, -1));
    needles.add(encodeURIComponent(secret));
  }
  if (needles.size === 0) return (text) => text;
  const list = [...needles].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const needle of list) {
      if (out.includes(needle)) out = out.split(needle).join(MASK);
    }
    return out;
  };
}
