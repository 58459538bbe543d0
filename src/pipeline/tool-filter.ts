// Hides tools by name (--allow-tools / --deny-tools globs): drops them from tools/list results and refuses calls to them.

import { BridgeError } from '../core/errors.js';
import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import type { HiddenBy } from '../config/tool-patterns.js';

/**
 * A list of globs, compiled once, that says which of them is the first to match a name: `*` stands
 * for any run of code points (none included), `?` for exactly one, every other character for
 * itself, case counting (tool names are case-sensitive).
 */
export interface GlobMatcher {
  /** The index of the first pattern that matches `name`, or -1 when none does. */
  firstMatch(name: string): number;
}

/**
 * How much the automaton of the wildcard patterns may keep: NFA positions plus transition slots,
 * summed over its states (4 bytes each). Past it the states are dropped and built again as names
 * need them, so a server's names cannot grow it, only the patterns' own structure fills it.
 */
export const MAX_GLOB_AUTOMATON_CELLS = 1 << 20;

const STAR = -1;
const ANY = -2;
const ACCEPT = -3;

/** A state of the automaton: the NFA positions it stands for, its next state per character class (-1 unknown), the first pattern it accepts. */
interface GlobState {
  positions: Int32Array;
  next: Int32Array;
  accepts: number;
}

/**
 * Compiles `patterns` once for every name a server may send. Patterns without `*` or `?` are one
 * Map lookup; the others run together as one automaton (the NFA of every pattern, its states
 * built on first use and kept), so a name costs one step per code point however many patterns
 * there are: no name can make matching slower than linear in its length (a tools/list of 100,000
 * tools against 256 patterns is one pass over the names, not 25 million matches).
 */
export function createGlobMatcher(patterns: readonly string[]): GlobMatcher {
  const exact = new Map<string, number>();
  // The NFA: one position per pattern token, and an ACCEPT position after each pattern's last.
  const kinds: number[] = [];
  const acceptOf: number[] = [];
  const starts: number[] = [];
  const classOf = new Map<number, number>();
  patterns.forEach((pattern, index) => {
    if (!/[*?]/.test(pattern)) {
      if (!exact.has(pattern)) exact.set(pattern, index);
      return;
    }
    starts.push(kinds.length);
    let previous = 0;
    for (const char of pattern) {
      const kind = char === '*' ? STAR : char === '?' ? ANY : char.codePointAt(0)!;
      if (kind === STAR && previous === STAR) continue; // ** matches what * does
      if (kind >= 0 && !classOf.has(kind)) classOf.set(kind, classOf.size + 1);
      kinds.push(kind);
      acceptOf.push(-1);
      previous = kind;
    }
    kinds.push(ACCEPT);
    acceptOf.push(index);
  });
  if (starts.length === 0) return { firstMatch: (name) => exact.get(name) ?? -1 };

  // Class 0 is every character no pattern names: only ? and * move on it. ASCII from a table.
  const width = classOf.size + 1;
  const asciiClass = new Int32Array(128);
  for (const [code, cls] of classOf) if (code < 128) asciiClass[code] = cls;
  // Marks the positions already in the set being built; cleared again once it is built.
  const seen = new Uint8Array(kinds.length);
  let states: GlobState[] = [];
  let byKey = new Map<string, number>();
  let cells = 0;

  /** The state for these positions (a * position brings the one after it), made if new. */
  const intern = (positions: number[]): number => {
    for (const position of positions) seen[position] = 0;
    positions.sort((a, b) => a - b);
    const key = positions.join(',');
    const known = byKey.get(key);
    if (known !== undefined) return known;
    if (cells + positions.length + width > MAX_GLOB_AUTOMATON_CELLS) {
      states = [];
      byKey = new Map();
      cells = 0;
    }
    let accepts = -1;
    for (const position of positions) {
      const index = acceptOf[position]!;
      if (index !== -1 && (accepts === -1 || index < accepts)) accepts = index;
    }
    states.push({ positions: Int32Array.from(positions), next: new Int32Array(width).fill(-1), accepts });
    cells += positions.length + width;
    byKey.set(key, states.length - 1);
    return states.length - 1;
  };
  const add = (into: number[], position: number) => {
    if (seen[position] === 1) return;
    seen[position] = 1;
    into.push(position);
    if (kinds[position] === STAR) add(into, position + 1);
  };
  const startPositions = () => {
    const positions: number[] = [];
    for (const start of starts) add(positions, start);
    return positions;
  };
  /** The state after reading a character of class `cls` in state `from`; may rebuild the table. */
  const step = (from: GlobState, cls: number): number => {
    const positions: number[] = [];
    for (const position of from.positions) {
      const kind = kinds[position]!;
      if (kind === STAR) add(positions, position);
      else if (kind === ANY || (kind >= 0 && classOf.get(kind) === cls)) add(positions, position + 1);
    }
    return intern(positions);
  };
  let start = intern(startPositions());

  const firstWildcardMatch = (name: string): number => {
    let current = states[start]!;
    for (let i = 0; i < name.length;) {
      const code = name.charCodeAt(i) < 128 ? name.charCodeAt(i) : name.codePointAt(i)!;
      i += code > 0xffff ? 2 : 1;
      const cls = code < 128 ? asciiClass[code]! : (classOf.get(code) ?? 0);
      let next = current.next[cls]!;
      if (next === -1) {
        const before = states;
        next = step(current, cls);
        if (states !== before) {
          // The table was dropped to stay in bounds: the start state is made again.
          const id = next;
          start = intern(startPositions());
          next = id;
        } else current.next[cls] = next;
      }
      current = states[next]!;
      if (current.positions.length === 0) return -1; // no pattern can match any more
    }
    return current.accepts;
  };

  return {
    firstMatch(name) {
      const literal = exact.get(name) ?? -1;
      const wildcard = firstWildcardMatch(name);
      return literal === -1 ? wildcard : wildcard === -1 ? literal : Math.min(literal, wildcard);
    },
  };
}

export class ToolFilter {
  readonly #allow: GlobMatcher | undefined;
  readonly #deny: GlobMatcher;
  readonly #allowPatterns: readonly string[];
  readonly #denyPatterns: readonly string[];
  /** One matcher per allow pattern, made only for a pattern no name matched first (see listWarnings). */
  readonly #allowEach = new Map<number, GlobMatcher>();

  /** `allow` empty: every tool is allowed; a tool must match an allow pattern and no deny pattern. Both are compiled here, once. */
  constructor(allow: readonly string[], deny: readonly string[]) {
    this.#allow = allow.length === 0 ? undefined : createGlobMatcher(allow);
    this.#deny = createGlobMatcher(deny);
    this.#allowPatterns = allow;
    this.#denyPatterns = deny;
  }

  /**
   * What a tools/list result says about the filters themselves: each --allow-tools pattern that
   * matches none of its tools, and a --deny-tools that hides every one of them. An empty list says
   * nothing. A page with a `nextCursor` is named as a page: a pattern may match on another.
   */
  listWarnings(message: JsonObject): string[] {
    const result = message.result;
    if (!isJsonObject(result) || !Array.isArray(result.tools)) return [];
    const names = result.tools.flatMap((tool) => (isJsonObject(tool) && typeof tool.name === 'string' ? [tool.name] : []));
    if (names.length === 0) return [];
    const of = typeof result.nextCursor === 'string' ? `the ${names.length} tools on this page of the server's list` : `the server's ${names.length} tools`;
    const warnings: string[] = [];
    if (this.#allow !== undefined) {
      const first = new Set<number>();
      for (const name of names) first.add(this.#allow.firstMatch(name));
      this.#allowPatterns.forEach((pattern, index) => {
        if (first.has(index)) return;
        // No name matched this pattern first; it may still match names an earlier pattern took.
        let one = this.#allowEach.get(index);
        if (one === undefined) this.#allowEach.set(index, (one = createGlobMatcher([pattern])));
        const matcher = one;
        if (names.some((name) => matcher.firstMatch(name) !== -1)) return;
        warnings.push(`--allow-tools pattern "${pattern}" matches none of ${of}`);
      });
    }
    if (this.#denyPatterns.length > 0 && names.every((name) => this.#deny.firstMatch(name) !== -1)) {
      warnings.push(`--deny-tools ${this.#denyPatterns.map((pattern) => `"${pattern}"`).join(',')} hides every one of ${of}`);
    }
    return warnings;
  }

  /** A filter, or undefined when neither option was given (the common case costs nothing). */
  static from(options: { allowTools: readonly string[]; denyTools: readonly string[] }): ToolFilter | undefined {
    return options.allowTools.length === 0 && options.denyTools.length === 0 ? undefined : new ToolFilter(options.allowTools, options.denyTools);
  }

  /** Why `name` is hidden, or undefined when it is shown. Deny wins over allow. */
  hiddenBy(name: string): HiddenBy | undefined {
    const denied = this.#deny.firstMatch(name);
    if (denied !== -1) return { option: '--deny-tools', pattern: this.#denyPatterns[denied]! };
    if (this.#allow !== undefined && this.#allow.firstMatch(name) === -1) return { option: '--allow-tools' };
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
