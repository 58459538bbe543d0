// "Did you mean": the known word a mistyped one is most likely meant to be.

/** The known words compared at most: a server's list of resources may be long, the suggestion is not worth more. */
export const MAX_SUGGESTION_CANDIDATES = 10_000;
/** Longest word compared, in characters: the distance costs the product of the two lengths. */
export const MAX_SUGGESTION_WORD_CHARS = 512;

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate nearest to `word` within `maxEdits` edits (the first of equals), or undefined.
 * Bounded: at most MAX_SUGGESTION_CANDIDATES candidates, and none longer than MAX_SUGGESTION_WORD_CHARS.
 */
export function nearestWord(word: string, candidates: readonly string[], maxEdits: number): string | undefined {
  if (word.length > MAX_SUGGESTION_WORD_CHARS) return undefined;
  let best: string | undefined;
  let bestDistance = maxEdits + 1;
  for (const candidate of candidates.slice(0, MAX_SUGGESTION_CANDIDATES)) {
    if (candidate.length > MAX_SUGGESTION_WORD_CHARS || Math.abs(candidate.length - word.length) >= bestDistance) continue;
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}
