// Hides tools by name (--allow-tools / --deny-tools globs): drops them from tools/list results and refuses calls to them.

import { BridgeError } from './errors.js';
import { isJsonObject, type JsonObject } from './json-rpc.js';

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

/**
 * Whether `name` matches `pattern`, where `*` stands for any run of characters (none included) and
 * `?` for exactly one; every other character stands for itself, case counts (tool names are
 * case-sensitive). Iterative with one backtrack point, so the time is at most
 * pattern length × name length whatever the stars: no regular expression to blow up.
 */
export function matchesGlob(pattern: string, name: string): boolean {
  const p = [...pattern];
  const n = [...name];
  let pi = 0;
  let ni = 0;
  let starAt = -1;
  let starMatched = 0;
  while (ni < n.length) {
    if (pi < p.length && (p[pi] === '?' || (p[pi] !== '*' && p[pi] === n[ni]))) {
      pi++;
      ni++;
    } else if (pi < p.length && p[pi] === '*') {
      starAt = pi++;
      starMatched = ni;
    } else if (starAt !== -1) {
      pi = starAt + 1;
      ni = ++starMatched;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}

export class ToolFilter {
  readonly #allow: readonly string[];
  readonly #deny: readonly string[];

  /** `allow` empty: every tool is allowed; a tool must match an allow pattern and no deny pattern. */
  constructor(allow: readonly string[], deny: readonly string[]) {
    this.#allow = allow;
    this.#deny = deny;
  }

  /** A filter, or undefined when neither option was given (the common case costs nothing). */
  static from(options: { allowTools: readonly string[]; denyTools: readonly string[] }): ToolFilter | undefined {
    return options.allowTools.length === 0 && options.denyTools.length === 0 ? undefined : new ToolFilter(options.allowTools, options.denyTools);
  }

  /** Why `name` is hidden, or undefined when it is shown. Deny wins over allow. */
  hiddenBy(name: string): HiddenBy | undefined {
    const denied = this.#deny.find((pattern) => matchesGlob(pattern, name));
    if (denied !== undefined) return { option: '--deny-tools', pattern: denied };
    if (this.#allow.length > 0 && !this.#allow.some((pattern) => matchesGlob(pattern, name))) return { option: '--allow-tools' };
    return undefined;
  }

  /**
   * A tools/list response without the hidden tools; the very same object when none is hidden (so
   * the server's bytes can go to stdout as they came). Pages keep their `nextCursor`: a page may
   * end up empty, and the client goes on to the next one.
   */
  filterListResponse(message: JsonObject): JsonObject {
    const result = message.result;
    if (!isJsonObject(result) || !Array.isArray(result.tools)) return message;
    const tools = result.tools.filter((tool) => !(isJsonObject(tool) && typeof tool.name === 'string' && this.hiddenBy(tool.name) !== undefined));
    return tools.length === result.tools.length ? message : { ...message, result: { ...result, tools } };
  }

  /**
   * The failure a tools/call to a hidden tool gets instead of being posted: the server is never
   * asked. -32602 is what a server answers for an unknown tool (2025-06-18 server/tools §Error
   * Handling), and to this client the tool does not exist.
   */
  refusal(method: string, message: JsonObject): BridgeError | undefined {
    if (method !== 'tools/call' || !isJsonObject(message.params) || typeof message.params.name !== 'string') return undefined;
    const tool = message.params.name;
    const hidden = this.hiddenBy(tool);
    if (hidden === undefined) return undefined;
    const why = hidden.pattern === undefined ? `it matches no ${hidden.option} pattern` : `it matches the ${hidden.option} pattern "${hidden.pattern}"`;
    return new BridgeError('TOOL_FILTERED', `Unknown tool: ${tool} (hidden by the bridge: ${why})`, {
      tool,
      filter: hidden.option,
      ...(hidden.pattern === undefined ? {} : { pattern: hidden.pattern }),
      hint: `the bridge was started with ${hidden.option}; change that option to reach this tool`,
    });
  }
}
