// Turns x-mcp-header annotations from tools/list results into Mcp-Param-* headers for tools/call.

import { encodeHeaderValue } from './header-encoding.js';
import type { HiddenBy } from '../config/tool-patterns.js';

/** What says whether the client may see a tool: the tool filter, when one is configured. */
interface ToolVisibility {
  hiddenBy(name: string): HiddenBy | undefined;
}

/** A tool dropped from a tools/list result, and why (logged as a warning by the caller). */
export interface InvalidTool {
  name: string;
  reason: string;
}

type HeaderType = 'string' | 'integer' | 'boolean';

/** One annotated property: where its value sits in `arguments`, and the header it fills. */
interface HeaderBinding {
  path: readonly string[];
  headerName: string;
  type: HeaderType;
}

type SchemaScan = { kind: 'valid'; bindings: HeaderBinding[] } | { kind: 'invalid'; reason: string };

const invalidBecause = (reason: string): SchemaScan => ({ kind: 'invalid', reason });

const X_MCP_HEADER = 'x-mcp-header';
const PARAM_HEADER_PREFIX = 'Mcp-Param-';

/** RFC 9110 §5.1 token: `1*tchar`. Excludes empty, spaces, controls (CR, LF) and delimiters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * JSON Schema keywords whose subschemas are not on a chain of `properties` keys. An annotation
 * under any of them makes the tool invalid (2026-07-28 Streamable HTTP §Schema Extension:
 * "An `x-mcp-header` annotation anywhere else makes the annotation — and thus the tool
 * definition — invalid"). `$ref` itself is not followed; its targets live in `$defs`.
 */
const UNREACHABLE_KEYWORDS = [
  'items',
  'prefixItems',
  'additionalItems',
  'contains',
  'unevaluatedItems',
  'additionalProperties',
  'unevaluatedProperties',
  'patternProperties',
  'propertyNames',
  'dependentSchemas',
  'dependencies',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
  'contentSchema',
] as const;

/** Keywords whose value is a `name → subschema` map rather than a subschema. */
const MAP_KEYWORDS: ReadonlySet<string> = new Set(['patternProperties', 'dependentSchemas', 'dependencies', '$defs', 'definitions']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pointerSegment(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function describePath(path: readonly string[]): string {
  return JSON.stringify(path.join('.'));
}

/** Where to look next: the schema node, its JSON Pointer, and its property path (undefined when unreachable). */
interface Visit {
  node: unknown;
  pointer: string;
  path: readonly string[] | undefined;
}

function childrenOf(node: Record<string, unknown>, pointer: string, path: readonly string[] | undefined): Visit[] {
  const children: Visit[] = [];
  if (isRecord(node.properties)) {
    for (const [key, child] of Object.entries(node.properties)) {
      children.push({ node: child, pointer: `${pointer}/properties/${pointerSegment(key)}`, path: path && [...path, key] });
    }
  }
  for (const keyword of UNREACHABLE_KEYWORDS) {
    const value = node[keyword];
    if (Array.isArray(value)) {
      value.forEach((child, index) => children.push({ node: child, pointer: `${pointer}/${keyword}/${index}`, path: undefined }));
    } else if (isRecord(value) && MAP_KEYWORDS.has(keyword)) {
      for (const [key, child] of Object.entries(value)) {
        children.push({ node: child, pointer: `${pointer}/${keyword}/${pointerSegment(key)}`, path: undefined });
      }
    } else if (value !== undefined) {
      children.push({ node: value, pointer: `${pointer}/${keyword}`, path: undefined });
    }
  }
  return children;
}

/**
 * Checks one annotated property against the constraints of 2026-07-28 server/tools §x-mcp-header
 * and returns its binding, or the reason the tool is invalid.
 *
 * Integers: the spec says integer *values* MUST be within ±(2^53−1). That is a rule about
 * argument values, not about the schema, so `minimum`/`maximum` are not inspected here; an
 * out-of-range value is left out of the headers in `headersForCall` instead.
 */
function toBinding(node: Record<string, unknown>, path: readonly string[]): HeaderBinding | string {
  const where = `property ${describePath(path)}`;
  const headerName = node[X_MCP_HEADER];
  if (typeof headerName !== 'string' || headerName === '') {
    return `${where} has an x-mcp-header that is not a non-empty string`;
  }
  if (!TOKEN.test(headerName)) {
    return `${where} has x-mcp-header ${JSON.stringify(headerName)}, which is not an RFC 9110 token`;
  }
  const type = node.type;
  if (type !== 'string' && type !== 'integer' && type !== 'boolean') {
    const found = type === undefined ? 'no type' : `type ${JSON.stringify(type)}`;
    return `${where} has ${found}; x-mcp-header is only allowed on type "string", "integer" or "boolean"`;
  }
  return { path, headerName, type };
}

/** Walks an inputSchema (parsed JSON, so acyclic) without recursion; stops at the first fault. */
function scanInputSchema(schema: unknown): SchemaScan {
  const bindings: HeaderBinding[] = [];
  const pathByLowerName = new Map<string, readonly string[]>();
  const stack: Visit[] = [{ node: schema, pointer: '', path: [] }];
  for (let visit = stack.pop(); visit !== undefined; visit = stack.pop()) {
    const { node, pointer, path } = visit;
    if (!isRecord(node)) continue;
    if (Object.hasOwn(node, X_MCP_HEADER)) {
      // Only properties reached from the root by `properties` keys alone may carry it (§Schema Extension).
      if (path === undefined || path.length === 0) {
        const where = JSON.stringify(pointer || '/');
        return invalidBecause(`x-mcp-header at ${where} is not on a property reachable from the root through "properties" keys alone`);
      }
      const binding = toBinding(node, path);
      if (typeof binding === 'string') return invalidBecause(binding);
      // Header names are case-insensitive, so annotations must be unique case-insensitively.
      const lowerName = binding.headerName.toLowerCase();
      const otherPath = pathByLowerName.get(lowerName);
      if (otherPath !== undefined) {
        const both = `properties ${describePath(otherPath)} and ${describePath(path)}`;
        return invalidBecause(`${both} both declare header ${JSON.stringify(binding.headerName)} (header names are case-insensitive)`);
      }
      pathByLowerName.set(lowerName, path);
      bindings.push(binding);
    }
    // Reversed so that the stack visits children in document order.
    stack.push(...childrenOf(node, pointer, path).reverse());
  }
  return { kind: 'valid', bindings };
}

/** The value at the exact property path, or undefined when any step is missing or not an object. */
function valueAt(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** The spec's type conversion (§Value Encoding), or undefined when the value does not fit the declared type. */
function toHeaderText(value: unknown, type: HeaderType): string | undefined {
  switch (type) {
    case 'string':
      return typeof value === 'string' ? value : undefined;
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? String(value) : undefined;
  }
}

/**
 * Remembers each tool's header bindings from the tools/list results seen so far, and builds the
 * Mcp-Param-* headers for a tools/call from the most recently obtained inputSchema
 * (2026-07-28 Streamable HTTP §Custom Headers from Tool Parameters).
 */
export class ToolHeaderRegistry {
  readonly #bindingsByTool = new Map<string, readonly HeaderBinding[]>();
  readonly #filter: ToolVisibility | undefined;

  /** Tools `filter` hides are never remembered: no call to them is sent, so they need no headers. */
  constructor(filter?: ToolVisibility) {
    this.#filter = filter;
  }

  /**
   * Validates every tool's annotations, remembers the valid ones (later pages add to what is
   * known; a tool seen again replaces its entry) and returns a copy of `result` without the
   * invalid tools, which clients MUST exclude (§Schema Extension). A tool the filter hides is
   * neither checked nor remembered, and stays in the result for the filter to take out. The input
   * is not mutated and every other field is kept as it was. Anything that is not an object with a
   * `tools` array is returned unchanged.
   */
  rememberToolsListResult(result: unknown): { result: unknown; invalid: InvalidTool[] } {
    if (!isRecord(result) || !Array.isArray(result.tools)) return { result, invalid: [] };
    const invalid: InvalidTool[] = [];
    const kept: unknown[] = [];
    for (const tool of result.tools as unknown[]) {
      const name = isRecord(tool) && typeof tool.name === 'string' ? tool.name : undefined;
      if (name !== undefined && this.#filter?.hiddenBy(name) !== undefined) {
        // Not remembered, but kept in the result: the tool filter takes it out of what the client
        // sees, and says so when it hides every tool (a merged list is filtered after this).
        this.#bindingsByTool.delete(name);
        kept.push(tool);
        continue;
      }
      const scan = scanInputSchema(isRecord(tool) ? tool.inputSchema : undefined);
      if (scan.kind === 'invalid') {
        invalid.push({ name: name ?? '(unnamed tool)', reason: scan.reason });
        if (name !== undefined) this.#bindingsByTool.delete(name);
        continue;
      }
      if (name !== undefined) this.#bindingsByTool.set(name, scan.bindings);
      kept.push(tool);
    }
    return { result: { ...result, tools: kept }, invalid };
  }

  /**
   * The `Mcp-Param-*` headers for a tools/call `params` object. A header is omitted when its
   * argument is null or absent (§Custom Headers table) or does not have the declared type (the
   * server rejects the call; the bridge never invents a value). Unknown tools get none.
   */
  headersForCall(params: unknown): Record<string, string> {
    const headers: Record<string, string> = {};
    if (!isRecord(params) || typeof params.name !== 'string') return headers;
    for (const binding of this.#bindingsByTool.get(params.name) ?? []) {
      const text = toHeaderText(valueAt(params.arguments, binding.path), binding.type);
      if (text !== undefined) headers[`${PARAM_HEADER_PREFIX}${binding.headerName}`] = encodeHeaderValue(text);
    }
    return headers;
  }

  /** Whether a tools/list result has described this tool (with or without annotations). */
  has(toolName: string): boolean {
    return this.#bindingsByTool.has(toolName);
  }

  /** Forgets every tool, e.g. before a fresh tools/list. */
  forget(): void {
    this.#bindingsByTool.clear();
  }
}
