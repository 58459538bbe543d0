// Knows the secret values of this run and blanks them out of any text before it leaves the process.

const MASK = '[REDACTED]';

/** Masks secrets in text; `appearsIn` tells whether bytes hold one, without decoding them. */
export interface Redactor {
  (text: string): string;
  appearsIn(bytes: Buffer): boolean;
}

/**
 * Returns a function that replaces every occurrence of each secret (as is, JSON-escaped and
 * URL-encoded) with a mask. Secrets shorter than 4 characters are ignored: masking "a" would
 * shred every log line while protecting nothing.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const needles = new Set<string>();
  for (const secret of secrets) {
    if (secret === undefined || secret.length < 4) continue;
    needles.add(secret);
    needles.add(JSON.stringify(secret).slice(1, -1));
    needles.add(encodeURIComponent(secret));
  }
  const list = [...needles].sort((a, b) => b.length - a.length);
  const redact = (text: string) => {
    let out = text;
    for (const needle of list) {
      if (out.includes(needle)) out = out.split(needle).join(MASK);
    }
    return out;
  };
  const byteNeedles = list.map((needle) => Buffer.from(needle, 'utf8'));
  return Object.assign(redact, { appearsIn: (bytes: Buffer) => byteNeedles.some((needle) => bytes.includes(needle)) });
}
