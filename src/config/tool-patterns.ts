// The --allow-tools / --deny-tools patterns as given: split, checked against their limits, and the option each came from.

/** Patterns one option may hold in all; more is a mistake (a file pasted in), not a filter. */
export const MAX_TOOL_PATTERNS = 256;
/**
 * Longest pattern, in characters: tool names SHOULD be 1 to 128 characters (2025-11-25 server/tools
 * §Tool Names), so a longer pattern matches nothing a well-behaved server offers.
 */
export const MAX_TOOL_PATTERN_CHARS = 256;

export type ToolFilterOption = '--allow-tools' | '--deny-tools';

/** Why a tool is hidden: the option, and the pattern that matched (deny) or that none did (allow). */
export interface HiddenBy {
  option: ToolFilterOption;
  /** The --deny-tools pattern that matched; absent for --allow-tools, where no pattern matched. */
  pattern?: string;
}

/**
 * The patterns of one option given once or more (`--deny-tools 'a,b' --deny-tools c`), split at
 * commas and trimmed; a string says what is wrong with them.
 */
export function parseToolPatterns(values: readonly string[], option: ToolFilterOption): string[] | string {
  const patterns = values.flatMap((value) => value.split(',')).map((pattern) => pattern.trim());
  if (patterns.some((pattern) => pattern === '')) return `${option} expects comma-separated tool names or patterns (* and ?), with no empty entry`;
  if (patterns.length > MAX_TOOL_PATTERNS) return `${option} holds ${patterns.length} patterns; at most ${MAX_TOOL_PATTERNS} are accepted`;
  const long = patterns.find((pattern) => pattern.length > MAX_TOOL_PATTERN_CHARS);
  if (long !== undefined) return `${option}: a pattern is longer than ${MAX_TOOL_PATTERN_CHARS} characters (tool names have at most 128)`;
  return [...new Set(patterns)];
}
