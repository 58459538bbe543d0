// In-process: a host's tools/list and prompts/list without a cursor answered with every page a loopback server has, in both eras and over HTTP+SSE.

import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_MERGED_PAGES } from '../../../src/pipeline/page-merger.js';
import { MODERN_VERSION_META_KEY } from '../../../src/core/protocol.js';
import { sendJson, startMcpServer, type McpServer, type RecordedRequest } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializedNotification, initializeRequest } from '../../helpers/spawn-bridge.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const NAMES = ['t1', 't2', 't3', 't4', 't5'];
const PAGE_SIZE = 2;

/** What a list page holds: the items from `cursor` (an index) on, PAGE_SIZE of them, and the next cursor while any are left. */
type Pager = (method: string, cursor: string | undefined, page: number) => Record<string, unknown> | undefined;

const itemsKey: Record<string, string> = { 'tools/list': 'tools', 'prompts/list': 'prompts', 'resources/list': 'resources' };

/** Pages of NAMES at PAGE_SIZE; `modern` adds the 2026-07-28 result fields, each page its own ttlMs and scope. */
function pagesOf(modern: boolean): Pager {
  return (method, cursor, page) => {
    const key = itemsKey[method];
    if (key === undefined) return undefined;
    const start = cursor === undefined ? 0 : Number(cursor);
    const items = NAMES.slice(start, start + PAGE_SIZE).map((name) =>
      key === 'resources' ? { uri: `file:///${name}`, name } : { name, description: `${key} ${name}`, inputSchema: { type: 'object' } },
    );
    const next = start + PAGE_SIZE < NAMES.length ? String(start + PAGE_SIZE) : undefined;
    const value: Record<string, unknown> = { [key]: items, ...(next === undefined ? {} : { nextCursor: next }) };
    if (modern) Object.assign(value, { resultType: 'complete', ttlMs: [60_000, 5_000, 30_000][page % 3], cacheScope: page === 1 ? 'private' : 'public' });
    return value;
  };
}

const listRequests = (server: McpServer, method = 'tools/list') => server.requests.filter((r) => r.method === 'POST' && r.message?.method === method);
const cursorsOf = (requests: RecordedRequest[]) => requests.map((r) => r.message.params?.cursor);
const namesOf = (reply: any, key = 'tools') => (reply.result[key] as { name: string }[]).map((item) => item.name);

type Hold = (message: any, res: ServerResponse) => boolean;

/** Answers a list request from `pager` (the n-th request of a method is page n, from 0) unless `hold` takes it; false for anything else. */
function answerPages(pager: Pager, hold?: Hold): (message: any, res: ServerResponse) => boolean {
  const counts = new Map<string, number>();
  return (message, res) => {
    const method = message?.method;
    if (typeof method !== 'string' || message.id === undefined) return false;
    if (hold?.(message, res) === true) return true;
    const page = counts.get(method) ?? 0;
    const value = pager(method, message.params?.cursor, page);
    if (value === undefined) return false;
    counts.set(method, page + 1);
    sendJson(res, 200, { jsonrpc: '2.0', id: message.id, result: value });
    return true;
  };
}

/** A 2025-06-18 server whose lists answer from `pager`, and a bridge with a session open to it. */
async function start2025(pager: Pager, args: string[] = [], hold?: Hold): Promise<{ server: McpServer; bridge: InProcessBridge }> {
  const answer = answerPages(pager, hold);
  const server = await startMcpServer({ route: ({ res, message }) => answer(message, res) });
  cleanups.push(() => server.close());
  const bridge = startInProcessBridge(['--url', server.url.href, ...args]);
  cleanups.push(() => bridge.kill());
  await openSession(bridge, server);
  return { server, bridge };
}

describe('a host that reads only the first page (2025-06-18 session)', () => {
  it('gets every tool of a server that pages at 2 from one tools/list: 5 tools from 3 pages, no nextCursor', async () => {
    const { server, bridge } = await start2025(pagesOf(false));
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(NAMES);
    expect(reply.result.nextCursor).toBeUndefined();
    expect(cursorsOf(listRequests(server))).toEqual([undefined, '2', '4']);
    // The first page is the host's request as it came; the others are the bridge's own requests,
    // each under a new id, and none of their ids reach stdout: the host gets one line.
    const [first, ...others] = listRequests(server).map((r) => r.message as { id: string });
    expect(first).toEqual({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(new Set(others.map((page) => page.id)).size).toBe(2);
    for (const page of others) expect(page.id).toMatch(/^fenbs-mcp-page-/);
    expect(bridge.lines.filter((line) => line.includes('fenbs-mcp-page-'))).toEqual([]);
    expect(bridge.lines.filter((line) => line.includes('"list"'))).toHaveLength(1);
  });

  it('gets every prompt from one prompts/list', async () => {
    const { server, bridge } = await start2025(pagesOf(false));
    bridge.send({ jsonrpc: '2.0', id: 'prompts', method: 'prompts/list', params: {} });
    const reply = await bridge.reply('prompts');
    expect(namesOf(reply, 'prompts')).toEqual(NAMES);
    expect(reply.result.nextCursor).toBeUndefined();
    expect(cursorsOf(listRequests(server, 'prompts/list'))).toEqual([undefined, '2', '4']);
  });

  it('passes a tools/list with a cursor through untouched: one request, under the client id, its page as the server sent it', async () => {
    const { server, bridge } = await start2025(pagesOf(false));
    bridge.send({ jsonrpc: '2.0', id: 'second', method: 'tools/list', params: { cursor: '2' } });
    const reply = await bridge.reply('second');
    expect(namesOf(reply)).toEqual(['t3', 't4']);
    expect(reply.result.nextCursor).toBe('4');
    expect(listRequests(server).map((r) => r.message)).toEqual([{ jsonrpc: '2.0', id: 'second', method: 'tools/list', params: { cursor: '2' } }]);
  });

  it('leaves resources/list alone: the first page, its nextCursor, one request under the client id', async () => {
    const { server, bridge } = await start2025(pagesOf(false));
    bridge.send({ jsonrpc: '2.0', id: 'res', method: 'resources/list' });
    const reply = await bridge.reply('res');
    expect(namesOf(reply, 'resources')).toEqual(['t1', 't2']);
    expect(reply.result.nextCursor).toBe('2');
    expect(listRequests(server, 'resources/list').map((r) => r.message.id)).toEqual(['res']);
  });

  it('applies the tool filter to the merged list, and warns once about the whole list', async () => {
    const { bridge } = await start2025(pagesOf(false), ['--allow-tools', 't*,x*', '--deny-tools', 't3']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(namesOf(await bridge.reply('list'))).toEqual(['t1', 't2', 't4', 't5']);
    const warnings = bridge
      .stderr()
      .split('\n')
      .filter((line) => line.includes('--allow-tools'))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(warnings).toEqual([`--allow-tools pattern "x*" matches none of the server's 5 tools`]);
  });

  it('answers with the first page only under --no-merge-pages', async () => {
    const { server, bridge } = await start2025(pagesOf(false), ['--no-merge-pages']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(['t1', 't2']);
    expect(reply.result.nextCursor).toBe('2');
    expect(listRequests(server).map((r) => r.message.id)).toEqual(['list']);
  });

  it('keeps the first of a name listed again on a later page, and says so once', async () => {
    const pager: Pager = (method, cursor) =>
      method !== 'tools/list'
        ? undefined
        : cursor === undefined
          ? { tools: [{ name: 'a' }, { name: 'b', description: 'first' }], nextCursor: 'p2' }
          : cursor === 'p2'
            ? { tools: [{ name: 'b', description: 'again' }, { name: 'c' }], nextCursor: 'p3' }
            : { tools: [{ name: 'a' }, { name: 'd' }] };
    const { bridge } = await start2025(pager);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(reply.result.tools).toEqual([{ name: 'a' }, { name: 'b', description: 'first' }, { name: 'c' }, { name: 'd' }]);
    expect(bridge.stderr().match(/listed a name again/g)).toHaveLength(1);
    expect(bridge.stderr()).toContain('"duplicates":2');
  });
});

describe('a server whose pages never end', () => {
  it('asks a server whose cursor never advances twice, and answers the host once with what it listed and that cursor', async () => {
    const pager: Pager = (method) => (method === 'tools/list' ? { tools: [{ name: 'a' }, { name: 'b' }], nextCursor: 'same' } : undefined);
    const { server, bridge } = await start2025(pager);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(['a', 'b']);
    expect(reply.result.nextCursor).toBe('same');
    expect(cursorsOf(listRequests(server))).toEqual([undefined, 'same']);
    expect(bridge.stderr()).toMatch(/merging the pages stopped: page 2 added nothing/);
    expect(bridge.lines.filter((line) => line.includes('"list"'))).toHaveLength(1);
  });

  it('stops at the first page that adds nothing when every page after the first is empty with a fresh cursor', async () => {
    const pager: Pager = (method, cursor, page) =>
      method !== 'tools/list' ? undefined : { tools: cursor === undefined ? [{ name: 'a' }] : [], nextCursor: `c${page + 1}` };
    const { server, bridge } = await start2025(pager);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(['a']);
    expect(reply.result.nextCursor).toBe('c2');
    expect(cursorsOf(listRequests(server))).toEqual([undefined, 'c1']);
  });

  it('asks an empty first page with a fresh cursor once', async () => {
    const pager: Pager = (method, _cursor, page) => (method === 'tools/list' ? { tools: [], nextCursor: `c${page + 1}` } : undefined);
    const { server, bridge } = await start2025(pager);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual([]);
    expect(reply.result.nextCursor).toBe('c1');
    expect(listRequests(server)).toHaveLength(1);
  });

  it(`asks at most MAX_MERGED_PAGES (${MAX_MERGED_PAGES}) pages of a list that always has one more, and hands on the cursor where it goes on`, async () => {
    const pager: Pager = (method, cursor) => {
      if (method !== 'tools/list') return undefined;
      const n = cursor === undefined ? 0 : Number(cursor);
      return { tools: [{ name: `tool_${n}` }], nextCursor: String(n + 1) };
    };
    const { server, bridge } = await start2025(pager);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list', 30_000);
    expect(reply.result.tools).toHaveLength(MAX_MERGED_PAGES);
    expect(reply.result.nextCursor).toBe(String(MAX_MERGED_PAGES));
    expect(listRequests(server)).toHaveLength(MAX_MERGED_PAGES);
  });
});

describe('a merge that cannot finish', () => {
  it('stops before the page that would take the merged reply past --max-message-bytes, with the cursor of that page', async () => {
    const pad = 'x'.repeat(300);
    const pager: Pager = (method, cursor) => {
      if (method !== 'tools/list') return undefined;
      const n = cursor === undefined ? 0 : Number(cursor);
      return { tools: [{ name: `tool_${n}`, description: pad }], ...(n < 4 ? { nextCursor: String(n + 1) } : {}) };
    };
    // Each page is about 400 bytes: one fits in 1000, three do not.
    const { server, bridge } = await start2025(pager, ['--max-message-bytes', '1000']);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(['tool_0', 'tool_1']);
    expect(reply.result.nextCursor).toBe('2');
    expect(Buffer.byteLength(bridge.lines.find((line) => line.includes('"list"'))!)).toBeLessThanOrEqual(1000);
    expect(listRequests(server)).toHaveLength(3);
    expect(bridge.stderr()).toMatch(/page 3 would take the merged reply past --max-message-bytes \(1000\)/);
  });

  it("stops before a later page that asks for input (2026-07-28 input_required), with that page's cursor for the client to ask itself", async () => {
    const pager: Pager = (method, cursor) => {
      if (method !== 'tools/list') return undefined;
      if (cursor === '2') return { resultType: 'input_required', inputRequests: { r: { method: 'roots/list' } }, requestState: 's' };
      return pagesOf(false)(method, cursor, 0);
    };
    const { server, bridge } = await start2025(pager);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(['t1', 't2']);
    expect(reply.result.nextCursor).toBe('2');
    expect(listRequests(server)).toHaveLength(2);
    expect(bridge.lines.filter((line) => line.includes('roots/list'))).toEqual([]);
  });

  it('answers the whole request with the error of a later page that fails with HTTP 500', async () => {
    const { bridge } = await start2025(pagesOf(false), [], (message, res) => {
      if (message.method !== 'tools/list' || message.params?.cursor !== '2') return false;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
      return true;
    });
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(reply.result).toBeUndefined();
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 500 });
  });

  it("answers the whole request with a later page's JSON-RPC error, under the client's id", async () => {
    const { bridge } = await start2025(pagesOf(false), [], (message, res) => {
      if (message.method !== 'tools/list' || message.params?.cursor !== '4') return false;
      sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'Invalid cursor' } });
      return true;
    });
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(await bridge.reply('list')).toEqual({ jsonrpc: '2.0', id: 'list', error: { code: -32602, message: 'Invalid cursor' } });
  });

  it('stops asking for pages once the client cancels the tools/list, and the page in flight is cancelled on the wire', async () => {
    let held: ServerResponse | undefined;
    const { server, bridge } = await start2025(pagesOf(false), [], (message, res) => {
      if (message.method !== 'tools/list' || message.params?.cursor !== '2') return false;
      held = res;
      return true;
    });
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const second = await server.waitForRequest((r) => r.message?.params?.cursor === '2');
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'list', reason: 'user' } });
    // 2025: cancellation is a notification (basic/utilities/cancellation), for the page the server is working on.
    await server.waitForRequest((r) => r.message?.method === 'notifications/cancelled' && r.message.params?.requestId === second.message.id);
    expect(await second.closedByClient).toBe(true);
    // A server that answers anyway is not read and starts nothing more.
    if (held !== undefined && !held.destroyed) sendJson(held, 200, { jsonrpc: '2.0', id: second.message.id, result: pagesOf(false)('tools/list', '2', 1) });
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await bridge.reply('after');
    expect(cursorsOf(listRequests(server))).toEqual([undefined, '2']);
    expect(bridge.lines.filter((line) => line.includes('"list"'))).toEqual([]);
  });

  it('answers REQUEST_TIMEOUT when the pages outlast the request deadline, and asks for no page after it', async () => {
    const { server, bridge } = await start2025(
      pagesOf(false),
      ['--request-timeout', '300'],
      (message) => message.method === 'tools/list' && message.params?.cursor === '2',
    );
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect((await bridge.reply('list')).error.data).toMatchObject({ bridgeCode: 'REQUEST_TIMEOUT' });
    const second = listRequests(server)[1]!;
    expect(await second.closedByClient).toBe(true);
    expect(cursorsOf(listRequests(server))).toEqual([undefined, '2']);
  });
});

/** A server that speaks only 2026-07-28: initialize refused, server/discover lists only 2026-07-28, lists paged with cache fields. */
async function start2026(hold?: Hold, pager: Pager = pagesOf(true)): Promise<McpServer> {
  const answer = answerPages(pager, hold);
  const server = await startMcpServer({
    route: ({ res, message }) => {
      const method = message?.method;
      if (method === 'initialize') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
        return true;
      }
      if (method === 'server/discover') {
        sendJson(res, 200, {
          jsonrpc: '2.0',
          id: message.id,
          result: { supportedVersions: ['2026-07-28'], capabilities: { tools: {}, prompts: {} }, resultType: 'complete', ttlMs: 0, cacheScope: 'private' },
        });
        return true;
      }
      return answer(message, res);
    },
  });
  cleanups.push(() => server.close());
  return server;
}

/** A 2025-era host through a bridge to `server`, initialized (the bridge translates for it). */
async function translatedHost(server: McpServer): Promise<InProcessBridge> {
  const bridge = startInProcessBridge(['--url', server.url.href]);
  cleanups.push(() => bridge.kill());
  bridge.send(initializeRequest('init'));
  await bridge.reply('init');
  bridge.send(initializedNotification);
  return bridge;
}

describe('a server that speaks only 2026-07-28', () => {
  it('gives a translated 2025-era host every tool, with resultType, the smallest ttlMs and the stricter cacheScope', async () => {
    const server = await start2026();
    const bridge = await translatedHost(server);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(NAMES);
    expect(reply.result).toMatchObject({ resultType: 'complete', ttlMs: 5_000, cacheScope: 'private' });
    expect(reply.result.nextCursor).toBeUndefined();
    const pages = listRequests(server);
    expect(cursorsOf(pages)).toEqual([undefined, '2', '4']);
    // Every page speaks as the first did: the protocol version in _meta, and the header from it.
    for (const page of pages) {
      expect(page.message.params._meta[MODERN_VERSION_META_KEY]).toBe('2026-07-28');
      expect(page.headers['mcp-protocol-version']).toBe('2026-07-28');
    }
    bridge.send({ jsonrpc: '2.0', id: 'prompts', method: 'prompts/list' });
    expect(namesOf(await bridge.reply('prompts'), 'prompts')).toEqual(NAMES);
  });

  it('stops asking for pages once the translated client cancels its tools/list: the page in flight has its stream closed', async () => {
    const server = await start2026((message) => message.method === 'tools/list' && message.params?.cursor === '2');
    const bridge = await translatedHost(server);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const second = await server.waitForRequest((r) => r.message?.params?.cursor === '2');
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'list', reason: 'user' } });
    // 2026-07-28: closing the stream is the cancellation (transports §Cancellation); nothing is posted.
    expect(await second.closedByClient).toBe(true);
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await bridge.reply('after');
    expect(cursorsOf(listRequests(server))).toEqual([undefined, '2']);
    expect(server.requests.filter((r) => r.message?.method === 'notifications/cancelled')).toEqual([]);
    expect(bridge.lines.filter((line) => line.includes('"list"'))).toEqual([]);
  });

  it('asks a server whose cursor never advances twice, and answers the translated host once with what it listed and that cursor', async () => {
    const pager: Pager = (method) =>
      method === 'tools/list'
        ? { tools: [{ name: 'a' }, { name: 'b' }], nextCursor: 'same', resultType: 'complete', ttlMs: 0, cacheScope: 'private' }
        : undefined;
    const server = await start2026(undefined, pager);
    const bridge = await translatedHost(server);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(['a', 'b']);
    expect(reply.result.nextCursor).toBe('same');
    expect(cursorsOf(listRequests(server))).toEqual([undefined, 'same']);
    expect(bridge.lines.filter((line) => line.includes('"list"'))).toHaveLength(1);
  });

  it('gives a 2026-07-28 host every tool from one tools/list', async () => {
    const server = await start2026();
    const bridge = startInProcessBridge(['--url', server.url.href]);
    cleanups.push(() => bridge.kill());
    const meta = {
      [MODERN_VERSION_META_KEY]: '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
    };
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list', params: { _meta: meta } });
    const reply = await bridge.reply('list');
    expect(namesOf(reply)).toEqual(NAMES);
    expect(reply.result).toMatchObject({ resultType: 'complete', ttlMs: 5_000, cacheScope: 'private' });
    expect(listRequests(server).map((r) => r.message.params._meta)).toEqual([meta, meta, meta]);
  });
});

describe('the 2024-11-05 HTTP+SSE transport', () => {
  it('gives a host every tool from one tools/list, each page answered on the event stream', async () => {
    const pager = pagesOf(false);
    let stream: ServerResponse | undefined;
    const server = await startMcpServer({
      route: ({ req, res, message }) => {
        if (req.method === 'GET') {
          stream = res;
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('event: endpoint\ndata: /messages\n\n');
          return true;
        }
        res.writeHead(202).end();
        if (message?.id === undefined || typeof message.method !== 'string') return true;
        const value =
          message.method === 'initialize'
            ? { protocolVersion: '2024-11-05', capabilities: { tools: {} }, serverInfo: { name: 'sse', version: '1' } }
            : (pager(message.method, message.params?.cursor, 0) ?? {});
        stream?.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: value })}\n\n`);
        return true;
      },
    });
    cleanups.push(() => server.close());
    const bridge = startInProcessBridge(['--url', server.url.href, '--transport', 'sse']);
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest('init'));
    await bridge.reply('init');
    bridge.send(initializedNotification);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(namesOf(await bridge.reply('list'))).toEqual(NAMES);
    expect(cursorsOf(listRequests(server))).toEqual([undefined, '2', '4']);
  });
});
