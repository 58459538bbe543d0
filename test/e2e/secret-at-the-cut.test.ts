// Through the built bin at trace level: a token lying across the cut of a server's text reaches none of stdout, stderr and the --log-file.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { result, sendSse, sseEvent, startMcpServer, waitForStderr } from '../helpers/hardening-servers.js';
import { initializedNotification, initializeRequest, spawnBridge } from '../helpers/spawn-bridge.js';

const TOKEN = 'tok-7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b';
/** Cut lengths of the log excerpt (listen refusal) and of an event's data (a request stream). */
const LOG_EXCERPT_CHARS = 200;
const BODY_EXCERPT_CHARS = 500;
const across = (cut: number) => `${'x'.repeat(cut - 14)}${TOKEN} and more`;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the built bin, with a secret across the cut of what the server sent', () => {
  it('shows no part of it in stdout, stderr or the log file, for a refused listen stream and an event that is not JSON', async () => {
    const server = await startMcpServer({
      sessions: true,
      route: ({ req, message, res }) => {
        if (req.method === 'GET') {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(across(LOG_EXCERPT_CHARS));
          return true;
        }
        if (message?.method !== 'tools/call') return false;
        void sendSse(res, `data: ${across(BODY_EXCERPT_CHARS)}\n\n${sseEvent(result(message.id, { content: [] }))}`);
        return true;
      },
    });
    cleanups.push(() => server.close());
    const dir = mkdtempSync(join(tmpdir(), 'fenbs-cut-e2e-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const logFile = join(dir, 'bridge.log');
    const bridge = spawnBridge(['--url', server.url.href, '--log-level', 'trace', '--log-file', logFile], { FENBS_TOKEN: TOKEN });
    bridge.send(initializeRequest(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    await waitForStderr(bridge, /listen stream refused/);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    expect((await bridge.reply(2)).result).toEqual({ content: [] });
    await waitForStderr(bridge, /not JSON; skipped/);
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
    const logged = readFileSync(logFile, 'utf8');
    expect(logged).toMatch(/listen stream refused/);
    for (const output of [bridge.lines.join('\n'), bridge.stderr(), logged]) expect(output).not.toContain(TOKEN.slice(0, 12));
    expect(bridge.stderr()).toContain('[REDACTED]');
  });
});
