// The shell's JSON-RPC client over an in-process bridge: the era it picks, and a request stopped before it is sent.

import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { startDemoServer, type DemoServer } from '../../../src/demo/demo-server.js';
import { createRedactor } from '../../../src/logging/redactor.js';
import { Interrupted, ShellClient } from '../../../src/shell/client.js';

describe('ShellClient', () => {
  const token = `tok-${randomUUID()}`;
  let demo: DemoServer;
  let client: ShellClient;
  beforeAll(async () => {
    demo = await startDemoServer({ token });
    const env = { FENBS_TOKEN: token };
    const config = createConfig({ options: { url: demo.url.href }, env, readTextFile: () => '' });
    client = new ShellClient({
      config,
      env,
      logger: pino({ level: 'silent' }, new PassThrough()),
      redact: createRedactor([token]),
      clientInfo: { name: 'test', version: '1' },
    });
  });
  afterAll(async () => {
    await client.close();
    await demo.close();
  });

  it('falls back to initialize with a 2025 server and keeps the capabilities it announced', async () => {
    await client.open();
    expect(client.era).toBe('legacy');
    expect(client.capabilities).toMatchObject({ tools: {}, resources: {}, prompts: {} });
  });

  it('sends nothing for a request whose signal is already aborted', async () => {
    const stopped = new AbortController();
    stopped.abort();
    await expect(client.request('tools/list', {}, { signal: stopped.signal })).rejects.toBeInstanceOf(Interrupted);
    // The connection is still usable afterwards.
    expect((await client.request('tools/list')).tools).toHaveLength(4);
  });
});
