// End-to-end: a host's tools/list answered with every page merged through the built bin, and --no-merge-pages on its command line.

import { afterEach, describe, expect, it } from 'vitest';
import { openSession, sendJson, startMcpServer, type McpServer } from '../helpers/hardening-servers.js';
import { spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A 2025-06-18 server whose tools/list pages at 2 over five tools. */
async function pagedServer(): Promise<McpServer> {
  const server = await startMcpServer({
    route: ({ res, message }) => {
      if (message?.method !== 'tools/list') return false;
      const start = Number(message.params?.cursor ?? 0);
      const tools = ['t1', 't2', 't3', 't4', 't5'].slice(start, start + 2).map((name) => ({ name, inputSchema: { type: 'object' } }));
      sendJson(res, 200, { jsonrpc: '2.0', id: message.id, result: { tools, ...(start + 2 < 5 ? { nextCursor: String(start + 2) } : {}) } });
      return true;
    },
  });
  cleanups.push(() => server.close());
  return server;
}

async function listThrough(args: string[]): Promise<{ names: string[]; nextCursor: unknown; requests: number }> {
  const server = await pagedServer();
  const bridge: BridgeProcess = spawnBridge(['--url', server.url.href, ...args]);
  cleanups.push(() => bridge.kill());
  await openSession(bridge, server);
  bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  const reply = await bridge.reply('list');
  bridge.end();
  expect((await bridge.exited).code).toBe(0);
  return {
    names: (reply.result.tools as { name: string }[]).map((tool) => tool.name),
    nextCursor: reply.result.nextCursor,
    requests: server.requests.filter((r) => r.message?.method === 'tools/list').length,
  };
}

describe('pages of a list through the built bin', () => {
  it('answers one tools/list with all five tools of a server that pages at 2', async () => {
    expect(await listThrough([])).toEqual({ names: ['t1', 't2', 't3', 't4', 't5'], nextCursor: undefined, requests: 3 });
  });

  it('answers with the first page only under --no-merge-pages', async () => {
    expect(await listThrough(['--no-merge-pages'])).toEqual({ names: ['t1', 't2'], nextCursor: '2', requests: 1 });
  });
});
