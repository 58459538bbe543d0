import { describe, it, expect } from 'vitest';
import { ToolHeaderRegistry } from '../../../src/eras/tool-headers.js';

const objectSchema = (properties: Record<string, unknown>): Record<string, unknown> => ({ type: 'object', properties });
const toolWith = (name: string, inputSchema: unknown): Record<string, unknown> => ({ name, inputSchema });
const listOf = (...tools: unknown[]): Record<string, unknown> => ({ tools });

/** The names of the tools that survive one tools/list result in a fresh registry. */
function keptNames(result: Record<string, unknown>): string[] {
  const kept = new ToolHeaderRegistry().rememberToolsListResult(result).result as { tools: { name: string }[] };
  return kept.tools.map((tool) => tool.name);
}

/** Validates one schema in a fresh registry. */
function check(inputSchema: unknown): { kept: boolean; reason: string | undefined } {
  const { invalid } = new ToolHeaderRegistry().rememberToolsListResult(listOf(toolWith('t', inputSchema)));
  return { kept: invalid.length === 0, reason: invalid[0]?.reason };
}

// 2026-07-28 server/tools §x-mcp-header, Streamable HTTP §Schema Extension.
describe('ToolHeaderRegistry validation', () => {
  it.each([
    ['the spec example', objectSchema({ region: { type: 'string', 'x-mcp-header': 'Region' }, query: { type: 'string' } })],
    ['an integer property', objectSchema({ n: { type: 'integer', 'x-mcp-header': 'N' } })],
    ['a boolean property', objectSchema({ b: { type: 'boolean', 'x-mcp-header': 'B' } })],
    [
      'a nested property reached through properties alone',
      objectSchema({ a: objectSchema({ b: objectSchema({ c: { type: 'string', 'x-mcp-header': 'Deep' } }) }) }),
    ],
    ['every tchar', objectSchema({ s: { type: 'string', 'x-mcp-header': "!#$%&'*+-.^_`|~09AZaz" } })],
    ['distinct names on several properties', objectSchema({ a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'integer', 'x-mcp-header': 'B' } })],
    ['a property whose name is x-mcp-header', objectSchema({ 'x-mcp-header': { type: 'string' } })],
    [
      'a schema without annotations that uses every keyword',
      { type: 'object', properties: { a: { type: 'array', items: { type: 'string' } } }, oneOf: [{}], $defs: { X: {} } },
    ],
    // The ±(2^53−1) rule is about integer values; schema bounds are not part of it.
    ['an integer property whose bounds exceed the safe range', objectSchema({ n: { type: 'integer', minimum: -1e20, maximum: 1e20, 'x-mcp-header': 'N' } })],
    ['no inputSchema at all', undefined],
    ['an inputSchema that is not an object', true],
  ])('accepts %s', (_, inputSchema) => {
    expect(check(inputSchema)).toEqual({ kept: true, reason: undefined });
  });

  const annotated = (schema: Record<string, unknown>): Record<string, unknown> => ({ ...schema, 'x-mcp-header': 'H' });
  const stringHeader = { type: 'string', 'x-mcp-header': 'H' };

  it.each([
    ['an empty annotation', objectSchema({ p: { type: 'string', 'x-mcp-header': '' } }), /"p".*not a non-empty string/],
    ['a number annotation', objectSchema({ p: { type: 'string', 'x-mcp-header': 7 } }), /"p".*not a non-empty string/],
    ['a null annotation', objectSchema({ p: { type: 'string', 'x-mcp-header': null } }), /"p".*not a non-empty string/],
    ['an object annotation', objectSchema({ p: { type: 'string', 'x-mcp-header': { name: 'H' } } }), /"p".*not a non-empty string/],
    ['a space in the name', objectSchema({ p: { type: 'string', 'x-mcp-header': 'My Header' } }), /"p".*"My Header".*RFC 9110 token/],
    ['a colon in the name', objectSchema({ p: { type: 'string', 'x-mcp-header': 'A:B' } }), /RFC 9110 token/],
    ['a CRLF in the name', objectSchema({ p: { type: 'string', 'x-mcp-header': 'A\r\nB' } }), /"A\\r\\nB".*RFC 9110 token/],
    ['a NUL in the name', objectSchema({ p: { type: 'string', 'x-mcp-header': 'A\0' } }), /RFC 9110 token/],
    ['a non-ASCII name', objectSchema({ p: { type: 'string', 'x-mcp-header': 'Grüße' } }), /RFC 9110 token/],
    ['a delimiter in the name', objectSchema({ p: { type: 'string', 'x-mcp-header': 'a(b)' } }), /RFC 9110 token/],
    ['a number property', objectSchema({ p: { type: 'number', 'x-mcp-header': 'H' } }), /"p" has type "number"/],
    ['an array property', objectSchema({ p: { type: 'array', items: { type: 'string' }, 'x-mcp-header': 'H' } }), /type "array"/],
    ['an object property', objectSchema({ p: annotated(objectSchema({})) }), /type "object"/],
    ['a union type', objectSchema({ p: { type: ['string', 'null'], 'x-mcp-header': 'H' } }), /type \["string","null"\]/],
    ['a property without a type', objectSchema({ p: { enum: ['a', 'b'], 'x-mcp-header': 'H' } }), /"p" has no type/],
    [
      'names differing only in case',
      objectSchema({ a: { type: 'string', 'x-mcp-header': 'Region' }, b: { type: 'string', 'x-mcp-header': 'REGION' } }),
      /"a" and "b".*"REGION"/,
    ],
    ['a duplicate name at another depth', objectSchema({ a: stringHeader, o: objectSchema({ b: { type: 'string', 'x-mcp-header': 'h' } }) }), /"a" and "o.b"/],
    ['an annotation on the root', annotated(objectSchema({})), /"\/" is not on a property reachable/],
    ['an annotation under items', objectSchema({ list: { type: 'array', items: stringHeader } }), /"\/properties\/list\/items"/],
    [
      'an annotation under a property of items',
      objectSchema({ list: { type: 'array', items: objectSchema({ id: stringHeader }) } }),
      /"\/properties\/list\/items\/properties\/id"/,
    ],
    ['an annotation under prefixItems', objectSchema({ t: { type: 'array', prefixItems: [stringHeader] } }), /"\/properties\/t\/prefixItems\/0"/],
    ['an annotation under oneOf', objectSchema({ v: { oneOf: [stringHeader, { type: 'integer' }] } }), /"\/properties\/v\/oneOf\/0"/],
    ['an annotation under anyOf', { type: 'object', anyOf: [objectSchema({ p: stringHeader })] }, /"\/anyOf\/0\/properties\/p"/],
    ['an annotation under allOf', { type: 'object', allOf: [objectSchema({ p: stringHeader })] }, /"\/allOf\/0\/properties\/p"/],
    ['an annotation under not', { type: 'object', not: objectSchema({ p: stringHeader }) }, /"\/not\/properties\/p"/],
    ['an annotation under if', { type: 'object', if: objectSchema({ p: stringHeader }) }, /"\/if\/properties\/p"/],
    ['an annotation under then', { type: 'object', then: objectSchema({ p: stringHeader }) }, /"\/then\/properties\/p"/],
    ['an annotation under else', { type: 'object', else: objectSchema({ p: stringHeader }) }, /"\/else\/properties\/p"/],
    ['an annotation under $defs', { type: 'object', properties: { p: { $ref: '#/$defs/P' } }, $defs: { P: stringHeader } }, /"\/\$defs\/P"/],
    ['an annotation under definitions', { type: 'object', definitions: { P: stringHeader } }, /"\/definitions\/P"/],
    ['an annotation under additionalProperties', { type: 'object', additionalProperties: stringHeader }, /"\/additionalProperties"/],
    ['an annotation under patternProperties', { type: 'object', patternProperties: { '^x/y': stringHeader } }, /"\/patternProperties\/\^x~1y"/],
    [
      'an annotation under dependentSchemas',
      { type: 'object', dependentSchemas: { a: objectSchema({ p: stringHeader }) } },
      /"\/dependentSchemas\/a\/properties\/p"/,
    ],
    [
      'a valid annotation next to an unreachable one',
      { ...objectSchema({ ok: stringHeader }), oneOf: [objectSchema({ p: { type: 'string', 'x-mcp-header': 'Other' } })] },
      /"\/oneOf\/0\/properties\/p"/,
    ],
  ])('rejects a tool with %s', (_, inputSchema, reason) => {
    const result = check(inputSchema);
    expect(result.kept).toBe(false);
    expect(result.reason).toMatch(reason);
  });

  it('names the tool and gives one reason per invalid tool', () => {
    const { invalid } = new ToolHeaderRegistry().rememberToolsListResult(
      listOf(
        toolWith('bad_number', objectSchema({ p: { type: 'number', 'x-mcp-header': 'P' } })),
        toolWith('good', objectSchema({ p: { type: 'string', 'x-mcp-header': 'P' } })),
        toolWith('bad_items', objectSchema({ l: { type: 'array', items: { type: 'string', 'x-mcp-header': 'L' } } })),
      ),
    );
    expect(invalid.map((tool) => tool.name)).toEqual(['bad_number', 'bad_items']);
  });

  it('keeps log lines single-line by quoting control characters in reasons', () => {
    const { reason } = check(objectSchema({ 'a\nb': { type: 'string', 'x-mcp-header': 'X\r\nInjected: 1' } }));
    expect(reason).not.toMatch(/[\r\n]/);
  });
});

describe('ToolHeaderRegistry.rememberToolsListResult', () => {
  const good = toolWith('good', objectSchema({ region: { type: 'string', 'x-mcp-header': 'Region' } }));
  const bad = toolWith('bad', objectSchema({ ratio: { type: 'number', 'x-mcp-header': 'Ratio' } }));

  it('removes invalid tools and keeps the order of the others', () => {
    const plain = toolWith('plain', objectSchema({}));
    expect(keptNames(listOf(good, bad, plain))).toEqual(['good', 'plain']);
  });

  it('keeps every other field of the result and of each tool exactly', () => {
    const tool = { ...good, title: 'Good', _meta: { 'example.com/x': 1 }, annotations: { readOnlyHint: true }, futureField: [1] };
    const result = {
      resultType: 'complete',
      tools: [tool, bad],
      nextCursor: 'c2',
      ttlMs: 300000,
      cacheScope: 'public',
      _meta: { k: 'v' },
      futureField: { a: 1 },
    };
    const { result: forwarded } = new ToolHeaderRegistry().rememberToolsListResult(result);
    expect(forwarded).toEqual({ ...result, tools: [tool] });
    expect(Object.keys(forwarded as object)).toEqual(Object.keys(result));
  });

  it('does not mutate the result it is given', () => {
    const result = { tools: [good, bad], nextCursor: 'c2' };
    const before = structuredClone(result);
    const { result: forwarded } = new ToolHeaderRegistry().rememberToolsListResult(result);
    expect(result).toEqual(before);
    expect(forwarded).not.toBe(result);
  });

  it.each([
    ['null', null],
    ['a string', 'tools'],
    ['an array', [good]],
    ['an object without tools', { nextCursor: 'x' }],
    ['an object whose tools is not an array', { tools: { good } }],
  ])('returns %s unchanged with no invalid tools', (_, result) => {
    const registry = new ToolHeaderRegistry();
    expect(registry.rememberToolsListResult(result)).toEqual({ result, invalid: [] });
    expect(registry.rememberToolsListResult(result).result).toBe(result);
  });

  it('keeps tool entries that are not objects or have no name, and remembers nothing for them', () => {
    const registry = new ToolHeaderRegistry();
    const nameless = { inputSchema: objectSchema({}) };
    const { result, invalid } = registry.rememberToolsListResult(listOf(null, nameless));
    expect(result).toEqual(listOf(null, nameless));
    expect(invalid).toEqual([]);
  });

  it('reports an unnamed invalid tool with a placeholder name', () => {
    const { invalid } = new ToolHeaderRegistry().rememberToolsListResult(listOf({ inputSchema: bad.inputSchema }));
    expect(invalid).toEqual([{ name: '(unnamed tool)', reason: expect.stringContaining('"ratio"') }]);
  });

  it('accumulates tools across pages', () => {
    const registry = new ToolHeaderRegistry();
    registry.rememberToolsListResult({ tools: [good], nextCursor: 'page-2' });
    registry.rememberToolsListResult(listOf(toolWith('second', objectSchema({ zone: { type: 'string', 'x-mcp-header': 'Zone' } }))));
    expect(registry.has('good') && registry.has('second')).toBe(true);
    expect(registry.headersForCall({ name: 'good', arguments: { region: 'eu' } })).toEqual({ 'Mcp-Param-Region': 'eu' });
    expect(registry.headersForCall({ name: 'second', arguments: { zone: 'z1' } })).toEqual({ 'Mcp-Param-Zone': 'z1' });
  });

  // SEP-2243 Implementation Note: clients MUST use the most recently obtained inputSchema.
  it('replaces a tool seen again with its newest schema', () => {
    const registry = new ToolHeaderRegistry();
    registry.rememberToolsListResult(listOf(good));
    registry.rememberToolsListResult(listOf(toolWith('good', objectSchema({ region: { type: 'string', 'x-mcp-header': 'Place' } }))));
    expect(registry.headersForCall({ name: 'good', arguments: { region: 'eu' } })).toEqual({ 'Mcp-Param-Place': 'eu' });
  });

  it('forgets a tool whose newest schema is invalid', () => {
    const registry = new ToolHeaderRegistry();
    registry.rememberToolsListResult(listOf(good));
    registry.rememberToolsListResult(listOf(toolWith('good', bad.inputSchema)));
    expect(registry.has('good')).toBe(false);
    expect(registry.headersForCall({ name: 'good', arguments: { region: 'eu' } })).toEqual({});
  });

  it('knows tools without annotations', () => {
    const registry = new ToolHeaderRegistry();
    registry.rememberToolsListResult(listOf(toolWith('plain', undefined)));
    expect(registry.has('plain')).toBe(true);
    expect(registry.has('other')).toBe(false);
  });

  it('forgets every tool on forget()', () => {
    const registry = new ToolHeaderRegistry();
    registry.rememberToolsListResult(listOf(good));
    registry.forget();
    expect(registry.has('good')).toBe(false);
    expect(registry.headersForCall({ name: 'good', arguments: { region: 'eu' } })).toEqual({});
  });
});

// 2026-07-28 Streamable HTTP §Custom Headers from Tool Parameters, §Value Encoding.
describe('ToolHeaderRegistry.headersForCall', () => {
  const registry = new ToolHeaderRegistry();
  registry.rememberToolsListResult(
    listOf(
      toolWith(
        'call',
        objectSchema({
          s: { type: 'string', 'x-mcp-header': 'Str' },
          i: { type: 'integer', 'x-mcp-header': 'Int' },
          b: { type: 'boolean', 'x-mcp-header': 'Bool' },
          o: objectSchema({ inner: { type: 'string', 'x-mcp-header': 'Inner' } }),
          toString: { type: 'string', 'x-mcp-header': 'Inherited' },
        }),
      ),
    ),
  );
  const headersFor = (args: unknown): Record<string, string> => registry.headersForCall({ name: 'call', arguments: args });

  it.each([
    ['a string as is', { s: 'us-west1' }, { 'Mcp-Param-Str': 'us-west1' }],
    ['a string that needs Base64', { s: 'Hello, 世界' }, { 'Mcp-Param-Str': '=?base64?SGVsbG8sIOS4lueVjA==?=' }],
    ['a string with CRLF as Base64', { s: 'a\r\nb' }, { 'Mcp-Param-Str': '=?base64?YQ0KYg==?=' }],
    ['an empty string as the empty sentinel', { s: '' }, { 'Mcp-Param-Str': '=?base64??=' }],
    ['a positive integer in decimal', { i: 42 }, { 'Mcp-Param-Int': '42' }],
    ['a negative integer in decimal', { i: -7 }, { 'Mcp-Param-Int': '-7' }],
    ['negative zero as 0', { i: -0 }, { 'Mcp-Param-Int': '0' }],
    ['the largest safe integer', { i: 2 ** 53 - 1 }, { 'Mcp-Param-Int': '9007199254740991' }],
    ['the smallest safe integer', { i: -(2 ** 53 - 1) }, { 'Mcp-Param-Int': '-9007199254740991' }],
    ['true', { b: true }, { 'Mcp-Param-Bool': 'true' }],
    ['false', { b: false }, { 'Mcp-Param-Bool': 'false' }],
    ['a nested value at its exact path', { o: { inner: 'deep' } }, { 'Mcp-Param-Inner': 'deep' }],
    [
      'every annotated value at once',
      { s: 'x', i: 1, b: true, o: { inner: 'y' }, toString: 'z' },
      { 'Mcp-Param-Str': 'x', 'Mcp-Param-Int': '1', 'Mcp-Param-Bool': 'true', 'Mcp-Param-Inner': 'y', 'Mcp-Param-Inherited': 'z' },
    ],
  ])('sends %s', (_, args, headers) => {
    expect(headersFor(args)).toEqual(headers);
  });

  it.each([
    ['a null value', { s: null, i: null, b: null, o: { inner: null } }],
    ['absent values', {}],
    ['a string given for an integer', { i: '42' }],
    ['a fraction given for an integer', { i: 1.5 }],
    ['an integer beyond the safe range', { i: 2 ** 53 }],
    ['an infinite number', { i: Infinity }],
    ['a number given for a string', { s: 42 }],
    ['a string given for a boolean', { b: 'true' }],
    ['an object given for a string', { s: { value: 'x' } }],
    ['a nested path through null', { o: null }],
    ['a nested path through an array', { o: [{ inner: 'x' }] }],
    ['a nested path through a string', { o: 'inner' }],
    ['a value the arguments only inherit', Object.create({ s: 'inherited' }) as unknown],
    ['a name found only on Object.prototype', { s: undefined }],
  ])('omits headers for %s', (_, args) => {
    expect(headersFor(args)).toEqual({});
  });

  it.each([
    ['no arguments', { name: 'call' }],
    ['arguments that are not an object', { name: 'call', arguments: 'x' }],
    ['an unknown tool', { name: 'unknown', arguments: { s: 'x' } }],
    ['a tool name that is not a string', { name: 1, arguments: { s: 'x' } }],
    ['params that are not an object', 'call'],
    ['no params', undefined],
  ])('returns no headers for %s', (_, params) => {
    expect(registry.headersForCall(params)).toEqual({});
  });
});
