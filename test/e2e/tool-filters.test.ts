// End-to-end: --allow-tools and --deny-tools through the built bin against the embedded demo server.

import { afterEach, describe, expect, it } from 'vitest';
import { initializedNotification, initializeRequest, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const running: BridgeProcess[] = [];
afterEach(() => {
  for (const bridge of running.splice(0)) bridge.kill();
});

function start(args: string[]): BridgeProcess {
  const bridge = spawnBridge(args);
  running.push(bridge);
  return bridge;
}

describe('tool filters from the command line', () => {
  it('hides tools by glob from tools/list and answers a call to a hidden one locally, naming the filter', async () => {
    const bridge = start(['--demo', '--allow-tools', 'tasks_*', '--deny-tools', 'tasks_create,tasks_im*']);
    bridge.send(initializeRequest(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect((await bridge.reply(2)).result.tools.map((tool: { name: string }) => tool.name)).toEqual(['tasks_list', 'tasks_get']);
    bridge.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'tasks_import', arguments: {} } });
    expect((await bridge.reply(3)).error).toMatchObject({ code: -32602, data: { bridgeCode: 'TOOL_FILTERED', filter: '--deny-tools', pattern: 'tasks_im*' } });
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
  });

  it('refuses an empty pattern with exit code 2 before it starts', async () => {
    const bridge = start(['--demo', '--deny-tools', 'a,,b']);
    expect((await bridge.exited).code).toBe(2);
    expect(bridge.stderr()).toMatch(/--deny-tools expects comma-separated tool names or patterns/);
  });
});
