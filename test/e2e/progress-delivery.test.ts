// A client built on SDK v1 handles a notification a microtask later than a response: it sees every
// progress notification only if the response reaches it in a read of its own.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startSdkV2Server, type SdkV2Server } from '../helpers/sdk-v2-server.js';
import { BIN } from '../helpers/spawn-bridge.js';

const clients: Client[] = [];
const servers: SdkV2Server[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const server of servers.splice(0)) await server.close();
});

async function clientThroughBridge(args: string[], env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, ...args],
    env: { PATH: process.env.PATH ?? '', FENBS_MCP_LOG_LEVEL: 'warn', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'fenbs-mcp-progress', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** Calls tasks_import 5 times and expects the progress callback to see 1…count before each result. */
async function expectEveryProgress(client: Client, count: number): Promise<void> {
  const expected = Array.from({ length: count }, (_, index) => index + 1);
  for (let call = 0; call < 5; call++) {
    const seen: number[] = [];
    const result = await client.callTool({ name: 'tasks_import', arguments: { count } }, undefined, { onprogress: (progress) => seen.push(progress.progress) });
    expect(result.isError).not.toBe(true);
    expect(seen, `call ${call}`).toEqual(expected);
  }
}

describe('progress notifications and the result, for an SDK v1 client', () => {
  it('delivers n of n progress notifications before the result, call after call, against the demo server', async () => {
    const client = await clientThroughBridge(['--demo']);
    await expectEveryProgress(client, 5);
  });

  // The SDK v2 server speaks only 2026-07-28, so the bridge translates for this 2025-era client; the
  // server writes every progress notification and the result back to back, in one burst.
  it('delivers n of n progress notifications before the result, call after call, against the SDK v2 server', async () => {
    const server = await startSdkV2Server({ token: 'progress-token-v2' });
    servers.push(server);
    const client = await clientThroughBridge(['--url', server.url, '--allow-http'], { FENBS_TOKEN: 'progress-token-v2' });
    await expectEveryProgress(client, 4);
  });

  // With its 2025 fallback on, the same server answers the 2025 client directly (no translation):
  // its stateless 2025 path also writes the progress notifications and the result in one burst.
  it('delivers n of n progress notifications before the result against the SDK v2 server speaking 2025 itself', async () => {
    const server = await startSdkV2Server({ token: 'progress-token-v2', legacy: 'stateless' });
    servers.push(server);
    const client = await clientThroughBridge(['--url', server.url, '--allow-http'], { FENBS_TOKEN: 'progress-token-v2' });
    await expectEveryProgress(client, 4);
  });
});
