// --allow-tools / --deny-tools: the glob matcher, the option parsing, and the filters through the bridge in both eras.

import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { startDemoServer } from '../../../src/demo/demo-server.js';
import { InFlight } from '../../../src/pipeline/in-flight.js';
import { type JsonObject } from '../../../src/core/json-rpc.js';
import { Router } from '../../../src/pipeline/router.js';
import { createGlobMatcher, MAX_GLOB_AUTOMATON_CELLS, ToolFilter } from '../../../src/pipeline/tool-filter.js';
import { ToolHeaderRegistry } from '../../../src/eras/tool-headers.js';
import { result, sendJson, startMcpServer } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { startSdkV2Server } from '../../helpers/sdk-v2-server.js';
import { initializedNotification, initializeRequest } from '../../helpers/spawn-bridge.js';
import { MODERN_VERSION_META_KEY } from '../../../src/core/protocol.js';
import { UsageError } from '../../../src/core/errors.js';
import { MAX_TOOL_PATTERN_CHARS, MAX_TOOL_PATTERNS, parseToolPatterns } from '../../../src/config/tool-patterns.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * The matcher the filter had before it was compiled, kept as the reference the compiled one must
 * agree with: one pattern against one name, code point by code point, one backtrack point.
 */
function referenceMatch(pattern: string, name: string): boolean {
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

/** The filter's verdict as it was decided before: the first deny pattern that matches, then any allow pattern. */
function referenceHiddenBy(allow: readonly string[], deny: readonly string[], name: string): unknown {
  const denied = deny.find((pattern) => referenceMatch(pattern, name));
  if (denied !== undefined) return { option: '--deny-tools', pattern: denied };
  if (allow.length > 0 && !allow.some((pattern) => referenceMatch(pattern, name))) return { option: '--allow-tools' };
  return undefined;
}

describe('createGlobMatcher', () => {
  it.each([
    ['tasks_list', 'tasks_list', true],
    ['tasks_*', 'tasks_list', true],
    ['tasks_*', 'tasks_', true],
    ['tasks_*', 'task_list', false],
    ['*', '', true],
    ['*_get', 'tasks_get', true],
    ['*_get', 'tasks_get_all', false],
    ['t?sks_get', 'tasks_get', true],
    ['t?sks_get', 'tsks_get', false],
    ['a*b*c', 'aXXbYYc', true],
    ['a*b*c', 'aXXbYY', false],
    ['*a*', 'bab', true],
    ['a**b', 'ab', true],
    ['Tasks_*', 'tasks_list', false], // tool names are case-sensitive
    ['grüße_*', 'grüße_tool', true],
    ['?', '😀', true], // ? stands for one code point, not one UTF-16 unit
    ['??', '😀', false],
  ])('%s against %s is %s', (pattern, name, expected) => {
    expect(createGlobMatcher([pattern]).firstMatch(name)).toBe(expected ? 0 : -1);
  });

  it('names the first pattern that matches, literal or not', () => {
    const matcher = createGlobMatcher(['x*', 'tasks_get', 'tasks_*', 'tasks_get']);
    expect([matcher.firstMatch('tasks_get'), matcher.firstMatch('tasks_x'), matcher.firstMatch('xtasks_get'), matcher.firstMatch('search')]).toEqual([
      1, 2, 0, -1,
    ]);
    expect(createGlobMatcher(['*_get', 'tasks_get']).firstMatch('tasks_get')).toBe(0);
  });

  it('answers a many-star pattern against a long name at once (no backtracking blow-up)', () => {
    // A regular expression built from this pattern takes exponential time on this name.
    expect(createGlobMatcher([`${'a*'.repeat(40)}b`]).firstMatch('a'.repeat(5000))).toBe(-1);
  });

  it('agrees with the matcher it replaced on random patterns, names and filters', () => {
    const unit = fc.constantFrom('a', 'b', 'c', '_', '😀', 'é', '*', '?');
    const pattern = fc.string({ unit, minLength: 1, maxLength: 8 });
    const name = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '_', '😀', 'é', '\ud83d', 'z'), maxLength: 12 });
    fc.assert(
      fc.property(
        fc.array(pattern, { maxLength: 6 }),
        fc.array(pattern, { maxLength: 6 }),
        fc.array(name, { minLength: 1, maxLength: 20 }),
        (allow, deny, names) => {
          fc.pre(allow.length + deny.length > 0);
          const filter = new ToolFilter(allow, deny);
          const matcher = createGlobMatcher(deny);
          for (const tool of names) {
            expect(filter.hiddenBy(tool)).toEqual(referenceHiddenBy(allow, deny, tool));
            expect(matcher.firstMatch(tool)).toBe(deny.findIndex((p) => referenceMatch(p, tool)));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it(`stays correct once its automaton passes ${MAX_GLOB_AUTOMATON_CELLS} cells and is built again`, () => {
    // `*a` followed by twelve ?s has a state for every set of the last thirteen characters' a's: 2^13
    // states of about 300 cells each with these 300 classes, past the bound.
    const patterns = [`*a${'?'.repeat(12)}`, ...Array.from({ length: 300 }, (_, i) => `${String.fromCodePoint(0x4e00 + i)}*`)];
    const matcher = createGlobMatcher(patterns);
    const random = fc.sample(fc.string({ unit: fc.constantFrom('a', 'b'), minLength: 11, maxLength: 40 }), { numRuns: 400, seed: 7 });
    for (const tool of random) expect(matcher.firstMatch(tool)).toBe(patterns.findIndex((p) => referenceMatch(p, tool)));
  });
});

describe('parseToolPatterns', () => {
  it('splits at commas, trims, joins repeated options and drops duplicates', () => {
    expect(parseToolPatterns(['tasks_*, search', 'search,fetch'], '--allow-tools')).toEqual(['tasks_*', 'search', 'fetch']);
  });

  it('refuses an empty entry, naming the option', () => {
    expect(parseToolPatterns(['a,,b'], '--deny-tools')).toMatch(/^--deny-tools expects comma-separated/);
    expect(parseToolPatterns([''], '--allow-tools')).toMatch(/^--allow-tools/);
  });

  it(`refuses more than ${MAX_TOOL_PATTERNS} patterns and a pattern longer than ${MAX_TOOL_PATTERN_CHARS} characters`, () => {
    const many = Array.from({ length: MAX_TOOL_PATTERNS + 1 }, (_, i) => `t${i}`).join(',');
    expect(parseToolPatterns([many], '--deny-tools')).toMatch(/at most 256/);
    expect(
      parseToolPatterns(
        Array.from({ length: MAX_TOOL_PATTERNS }, (_, i) => `t${i}`),
        '--deny-tools',
      ),
    ).toHaveLength(MAX_TOOL_PATTERNS);
    expect(parseToolPatterns(['x'.repeat(MAX_TOOL_PATTERN_CHARS + 1)], '--allow-tools')).toMatch(/longer than 256/);
    expect(parseToolPatterns(['x'.repeat(MAX_TOOL_PATTERN_CHARS)], '--allow-tools')).toHaveLength(1);
  });

  it('reaches the config, where a bad list is a usage error with a fix', () => {
    const config = createConfig({ options: { allowTools: ['a*'], denyTools: ['ab'] }, env: {}, readTextFile: () => '' });
    expect([config.allowTools, config.denyTools]).toEqual([['a*'], ['ab']]);
    expect(createConfig({ options: {}, env: {}, readTextFile: () => '' }).allowTools).toEqual([]);
    expect(() => createConfig({ options: { denyTools: [' , '] }, env: {}, readTextFile: () => '' })).toThrow(UsageError);
  });
});

describe('ToolFilter', () => {
  const filter = new ToolFilter(['tasks_*'], ['tasks_c*']);

  it('hides what no allow pattern matches and what a deny pattern matches; deny wins', () => {
    expect(filter.hiddenBy('tasks_get')).toBeUndefined();
    expect(filter.hiddenBy('search')).toEqual({ option: '--allow-tools' });
    expect(filter.hiddenBy('tasks_create')).toEqual({ option: '--deny-tools', pattern: 'tasks_c*' });
    expect(ToolFilter.from({ allowTools: [], denyTools: [] })).toBeUndefined();
  });

  it.each([
    ['256 plain names', Array.from({ length: 256 }, (_, i) => `denied_tool_number_${i}`)],
    ['256 globs of every shape', Array.from({ length: 256 }, (_, i) => [`denied_${i}_*`, `*_tool_${i}`, `*number_${i}x*`, `d?nied_tool_number_${i}`][i % 4]!)],
  ])('filters a tools/list of 100,000 tools against %s within a bound the per-pattern matcher missed by far', (_title, deny) => {
    // This bounds how long one tools/list can hold the event loop (nothing else is served
    // meanwhile); it is not a speed benchmark. The per-pattern matcher this replaced took 10 to
    // 18 s for either list on the (shared, loaded) development machine; this takes well under one.
    const tools = Array.from({ length: 100_000 }, (_, i) => ({ name: `server_tool_number_${i}`, description: 'a tool' }));
    tools[500] = { name: 'denied_tool_number_7', description: 'hidden' };
    const list = { jsonrpc: '2.0', id: 1, result: { tools } };
    const started = performance.now();
    const filtered = new ToolFilter([], deny).filterListResponse(list);
    const elapsedMs = performance.now() - started;
    expect((filtered.result as { tools: unknown[] }).tools).toHaveLength(99_999);
    expect(elapsedMs).toBeLessThan(3_000);
  });

  it('returns a tools/list response untouched (the same object) when it hides nothing, and leaves non-lists alone', () => {
    const list = { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'tasks_get' }], nextCursor: 'c2' } };
    expect(filter.filterListResponse(list)).toBe(list);
    const error = { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'no' } };
    expect(filter.filterListResponse(error)).toBe(error);
    const odd = { jsonrpc: '2.0', id: 1, result: { tools: 'none' } };
    expect(filter.filterListResponse(odd)).toBe(odd);
  });

  it('keeps nextCursor and every other field when it removes tools, and keeps entries that have no name', () => {
    const list = { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'tasks_create' }, { title: 'nameless' }], nextCursor: 'c2', _meta: { x: 1 } } };
    expect(filter.filterListResponse(list)).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [{ title: 'nameless' }], nextCursor: 'c2', _meta: { x: 1 } } });
  });

  it('says of a tools/list result which --allow-tools patterns match none of its tools and whether --deny-tools hides them all', () => {
    const list = (names: string[], nextCursor?: string): JsonObject => ({
      jsonrpc: '2.0',
      id: 1,
      result: { tools: names.map((name) => ({ name })), ...(nextCursor === undefined ? {} : { nextCursor }) },
    });
    const filter = new ToolFilter(['task_*', 'tasks_?et', 'tasks_get'], ['tasks_*']);
    expect(filter.listWarnings(list(['tasks_get', 'tasks_set']))).toEqual([
      `--allow-tools pattern "task_*" matches none of the server's 2 tools`,
      `--deny-tools "tasks_*" hides every one of the server's 2 tools`,
    ]);
    expect(filter.listWarnings(list(['tasks_get', 'other'], 'page-2'))).toEqual([
      `--allow-tools pattern "task_*" matches none of the 2 tools on this page of the server's list`,
    ]);
    // An empty list, or no list at all, says nothing about the patterns.
    expect(filter.listWarnings(list([]))).toEqual([]);
    expect(filter.listWarnings({ jsonrpc: '2.0', id: 1, error: { code: -1, message: 'no' } })).toEqual([]);
    expect(new ToolFilter([], ['x']).listWarnings(list(['a', 'b']))).toEqual([]);
  });

  it('refuses only a tools/call naming a hidden tool', () => {
    expect(filter.refusal('tools/list', { params: { name: 'search' } })).toBeUndefined();
    expect(filter.refusal('tools/call', { params: { name: 'tasks_get' } })).toBeUndefined();
    expect(filter.refusal('tools/call', { params: {} })).toBeUndefined();
    const refused = filter.refusal('tools/call', { params: { name: 'search' } })!;
    expect(refused.rpcCode).toBe(-32602);
    expect(refused.message).toBe('Unknown tool: search (hidden by the bridge: it matches no --allow-tools pattern)');
  });

  it('keeps hidden tools out of the x-mcp-header registry, whichever tools/list fed it', () => {
    const registry = new ToolHeaderRegistry(filter);
    const annotated = { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } };
    registry.rememberToolsListResult({ tools: [{ name: 'tasks_get', inputSchema: annotated }] });
    registry.rememberToolsListResult({
      tools: [
        { name: 'tasks_create', inputSchema: annotated },
        { name: 'tasks_get', inputSchema: annotated },
      ],
    });
    expect(registry.has('tasks_get')).toBe(true);
    expect(registry.has('tasks_create')).toBe(false);
  });

  it('filters a tools/list response that reaches its request on another stream', async () => {
    const written: JsonObject[] = [];
    const write = (message: JsonObject) => (written.push(message), Promise.resolve(true));
    const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
    const logger = pino({ level: 'silent' }, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
    const router = new Router({ inFlight, write, logger, toolFilter: filter });
    inFlight.begin('list', 'tools/list', 'legacy', { deadline: false });
    inFlight.begin('call', 'tools/call', 'legacy', { deadline: false });
    const serialised = '{"jsonrpc":"2.0","id":"list","result":{"tools":[{"name":"tasks_get"},{"name":"search"}]}}';
    await router.route(JSON.parse(serialised), serialised);
    await router.route({ jsonrpc: '2.0', id: 'call', result: { tools: [{ name: 'search' }] } }, undefined);
    expect(written).toEqual([
      { jsonrpc: '2.0', id: 'list', result: { tools: [{ name: 'tasks_get' }] } },
      { jsonrpc: '2.0', id: 'call', result: { tools: [{ name: 'search' }] } }, // not a tools/list: untouched
    ]);
  });
});

/** An in-process bridge to a fresh demo board with `args`, both stopped after the test, session open. */
async function bridgeToDemo(args: string[]): Promise<InProcessBridge> {
  const token = randomUUID();
  const demo = await startDemoServer({ token });
  cleanups.push(() => demo.close());
  const bridge = startInProcessBridge(['--url', demo.url.href, ...args], { FENBS_TOKEN: token });
  cleanups.push(() => bridge.kill());
  bridge.send(initializeRequest('init'));
  await bridge.reply('init');
  bridge.send(initializedNotification);
  return bridge;
}

const namesOf = (reply: { result: { tools: { name: string }[] } }) => reply.result.tools.map((tool) => tool.name);

describe('tool filters through the bridge against the demo server (2025-06-18)', () => {
  it('shows only the tools --allow-tools globs match, less those --deny-tools globs match', async () => {
    const bridge = await bridgeToDemo(['--allow-tools', 'tasks_*', '--deny-tools', 'tasks_c*,tasks_im?ort']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(namesOf(await bridge.reply('list'))).toEqual(['tasks_list', 'tasks_get']);
  });

  it('answers a call to a tool --deny-tools hides itself, naming the option and the pattern, and the server never sees it', async () => {
    const bridge = await bridgeToDemo(['--deny-tools', 'tasks_create']);
    bridge.send({ jsonrpc: '2.0', id: 'make', method: 'tools/call', params: { name: 'tasks_create', arguments: { title: 'must not exist' } } });
    const refused = await bridge.reply('make');
    expect(refused.error).toEqual({
      code: -32602,
      message: 'Unknown tool: tasks_create (hidden by the bridge: it matches the --deny-tools pattern "tasks_create")',
      data: {
        bridgeCode: 'TOOL_FILTERED',
        tool: 'tasks_create',
        filter: '--deny-tools',
        pattern: 'tasks_create',
        hint: 'the bridge was started with --deny-tools; change that option to reach this tool',
      },
    });
    // The board is unchanged: the call was never posted.
    bridge.send({ jsonrpc: '2.0', id: 'all', method: 'tools/call', params: { name: 'tasks_list', arguments: {} } });
    const titles = ((await bridge.reply('all')).result.structuredContent.tasks as { title: string }[]).map((task) => task.title);
    expect(titles).not.toContain('must not exist');
  });

  it('answers a call to a tool no --allow-tools pattern matches, naming --allow-tools', async () => {
    const bridge = await bridgeToDemo(['--allow-tools', 'tasks_get', '--allow-tools', 'tasks_l?st']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(namesOf(await bridge.reply('list'))).toEqual(['tasks_list', 'tasks_get']);
    bridge.send({ jsonrpc: '2.0', id: 'imp', method: 'tools/call', params: { name: 'tasks_import', arguments: {} } });
    expect((await bridge.reply('imp')).error).toMatchObject({ code: -32602, data: { bridgeCode: 'TOOL_FILTERED', filter: '--allow-tools' } });
    bridge.send({ jsonrpc: '2.0', id: 'get', method: 'tools/call', params: { name: 'tasks_get', arguments: { ref: 'T-1' } } });
    expect((await bridge.reply('get')).result).toBeDefined();
  });
});

describe('tool filters that match nothing, through the bridge against the demo server (2025-06-18)', () => {
  const warningsIn = (bridge: InProcessBridge) =>
    bridge
      .stderr()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((entry) => /--(allow|deny)-tools/.test(entry.msg));

  it('warns once per tools/list result about an --allow-tools pattern that matches none of the tools, naming it and the count', async () => {
    const bridge = await bridgeToDemo(['--allow-tools', 'task_*,tasks_*,tasks_get']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(namesOf(await bridge.reply('list'))).toEqual(['tasks_list', 'tasks_get', 'tasks_create', 'tasks_import']);
    // tasks_get is never the first pattern to match (tasks_* is): a pattern an earlier one covers is no mistake.
    expect(warningsIn(bridge).map((w) => [w.level, w.msg])).toEqual([[40, `--allow-tools pattern "task_*" matches none of the server's 4 tools`]]);
    bridge.send({ jsonrpc: '2.0', id: 'again', method: 'tools/list' });
    await bridge.reply('again');
    expect(warningsIn(bridge)).toHaveLength(2);
  });

  it('warns when --deny-tools hides every tool, and says nothing when the filters leave some', async () => {
    const bridge = await bridgeToDemo(['--deny-tools', 'tasks_*']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(namesOf(await bridge.reply('list'))).toEqual([]);
    expect(warningsIn(bridge).map((w) => w.msg)).toEqual([`--deny-tools "tasks_*" hides every one of the server's 4 tools`]);
    const quiet = await bridgeToDemo(['--allow-tools', 'tasks_*', '--deny-tools', 'tasks_c*']);
    quiet.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    await quiet.reply('list');
    expect(warningsIn(quiet)).toEqual([]);
  });
});

describe('tool filters through the bridge against a 2026-07-28 server', () => {
  it('filters tools/list and answers a call to a hidden tool locally, with no POST', async () => {
    const server = await startMcpServer({
      route: ({ res, message }) => {
        if (message?.method !== 'tools/list') return false;
        sendJson(
          res,
          200,
          result(message.id, {
            tools: [
              { name: 'search', inputSchema: { type: 'object' } },
              { name: 'admin_reset', inputSchema: { type: 'object' } },
            ],
          }),
        );
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url.href, '--deny-tools', 'admin_*']);
    cleanups.push(() => bridge.kill());
    const meta = {
      [MODERN_VERSION_META_KEY]: '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
    };
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list', params: { _meta: meta } });
    expect(namesOf(await bridge.reply('list'))).toEqual(['search']);
    bridge.send({ jsonrpc: '2.0', id: 'reset', method: 'tools/call', params: { name: 'admin_reset', arguments: {}, _meta: meta } });
    expect((await bridge.reply('reset')).error).toMatchObject({ code: -32602, data: { filter: '--deny-tools', pattern: 'admin_*' } });
    bridge.send({ jsonrpc: '2.0', id: 'find', method: 'tools/call', params: { name: 'search', arguments: {}, _meta: meta } });
    expect((await bridge.reply('find')).result.content[0].text).toBe('ok search');
    expect(server.postsFor('reset')).toEqual([]);
    expect(server.postsFor('find')).toHaveLength(1);
  });
});

describe('tool filters for a 2025-era client translated for a 2026-07-28-only server', () => {
  it('filters the translated tools/list and answers a call to a hidden tool without a round trip', async () => {
    const token = 'tool-filter-translated-token';
    const server = await startSdkV2Server({ token });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url, '--allow-tools', 'tasks_*', '--deny-tools', 'tasks_ask_*,tasks_import'], { FENBS_TOKEN: token });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    await bridge.reply('init');
    bridge.send(initializedNotification);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const names = namesOf(await bridge.reply('list'));
    expect(names).toContain('tasks_get');
    expect(names.filter((name) => !name.startsWith('tasks_') || name.startsWith('tasks_ask_') || name === 'tasks_import')).toEqual([]);
    const calls = () => server.requests.filter((r) => r.method === 'POST' && r.body?.method === 'tools/call').length;
    const before = calls();
    bridge.send({ jsonrpc: '2.0', id: 'imp', method: 'tools/call', params: { name: 'tasks_import', arguments: {} } });
    expect((await bridge.reply('imp')).error).toMatchObject({ code: -32602, data: { filter: '--deny-tools', pattern: 'tasks_import' } });
    expect(calls()).toBe(before);
  });
});
