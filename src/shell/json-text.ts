// JSON text of a server's value at any depth: exact for --json, cut to a readable depth for a person.

/**
 * Nesting a person is shown of a server's value (a tool's structuredContent, a schema's enum or
 * const); deeper parts are shown as `…`, and `--json` prints the whole. JSON.parse takes a value
 * of any depth, but JSON.stringify recurses and a 100,000-level value overflows its stack.
 */
export const MAX_SHOWN_DEPTH = 64;

/** What stands for a part nested deeper than MAX_SHOWN_DEPTH. */
export const DEEPER = '…';

/**
 * `value` (as JSON.parse made it) as JSON text, whatever its depth: JSON.stringify when it can, a
 * loop with its own stack when the value is too deep for JSON.stringify's recursion.
 */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
  }
  return deepJsonText(value);
}

interface Frame {
  entries: [string, unknown][];
  next: number;
  array: boolean;
}

function deepJsonText(root: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const write = (value: unknown) => {
    if (typeof value !== 'object' || value === null) {
      out.push(JSON.stringify(value) ?? 'null');
      return;
    }
    const array = Array.isArray(value);
    out.push(array ? '[' : '{');
    stack.push({ entries: array ? value.map((item, i) => [String(i), item]) : Object.entries(value), next: 0, array });
  };
  write(root);
  while (stack.length > 0) {
    const frame = stack.at(-1)!;
    if (frame.next === frame.entries.length) {
      out.push(frame.array ? ']' : '}');
      stack.pop();
      continue;
    }
    const [key, value] = frame.entries[frame.next]!;
    if (frame.next++ > 0) out.push(',');
    if (!frame.array) out.push(`${JSON.stringify(key)}:`);
    write(value);
  }
  return out.join('');
}

/** `value` with every part nested deeper than `maxDepth` replaced by DEEPER; `cut` tells whether anything was. */
export function shownWithin(value: unknown, maxDepth: number = MAX_SHOWN_DEPTH): { shown: unknown; cut: boolean } {
  let cut = false;
  // Recursion only to maxDepth: deeper is never entered.
  const within = (part: unknown, depth: number): unknown => {
    if (typeof part !== 'object' || part === null) return part;
    if (depth >= maxDepth) {
      cut = true;
      return DEEPER;
    }
    if (Array.isArray(part)) return part.map((item) => within(item, depth + 1));
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(part))
      Object.defineProperty(copy, key, { value: within(item, depth + 1), enumerable: true, writable: true, configurable: true });
    return copy;
  };
  const shown = within(value, 0);
  return { shown, cut };
}
