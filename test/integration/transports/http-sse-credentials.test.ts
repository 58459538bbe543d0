// In-process: the credential over HTTP+SSE: a 401 on the event stream's GET or on a POST to its endpoint renews it, as on Streamable HTTP.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { result, sendJson, startMcpServer, type McpServer } from '../../helpers/hardening-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializeRequest } from '../../helpers/spawn-bridge.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A token command that prints the token file and counts its runs; the test writes the file. */
function tokenCommand(token: string) {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-sse-token-'));
  const files = { token: join(dir, 'token'), count: join(dir, 'runs') };
  writeFileSync(files.token, `${token}\n`);
  writeFileSync(files.count, '');
  return {
    // Counted after the token is printed: a count of one means the first token is out.
    args: ['--token-command', 'cat "$FENBS_TEST_TOKEN"; echo run >> "$FENBS_TEST_COUNT"'],
    env: { FENBS_TEST_TOKEN: files.token, FENBS_TEST_COUNT: files.count },
    rotate: (next: string) => writeFileSync(files.token, `${next}\n`),
    runs: () => readFileSync(files.count, 'utf8').split('\n').filter(Boolean).length,
  };
}

/** An HTTP+SSE server (GET /mcp streams, POST /messages takes messages) that accepts one token at a time. */
async function rotatingSseServer(first: string): Promise<{ server: McpServer; accept: (token: string) => void }> {
  let accepted = first;
  let stream: ServerResponse | undefined;
  const server = await startMcpServer({
    route: ({ req, res, message }) => {
      if (req.headers.authorization !== `Bearer ${accepted}`) {
        sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' });
        return true;
      }
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (req.method === 'GET' && path === '/mcp') {
        stream = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: endpoint\ndata: /messages?sessionId=s1\n\n');
        return true;
      }
      if (req.method === 'POST' && path === '/messages') {
        res.writeHead(202).end();
        if (message?.id !== undefined) stream?.write(`event: message\ndata: ${JSON.stringify(result(message.id, { ok: message.method }))}\n\n`);
        return true;
      }
      res.writeHead(405).end();
      return true;
    },
  });
  cleanups.push(() => server.close());
  return { server, accept: (token) => (accepted = token) };
}

function bridgeWith(server: McpServer, args: string[], env: Record<string, string>): InProcessBridge {
  const bridge = startInProcessBridge(['--url', server.url.href, '--transport', 'sse', ...args], env);
  cleanups.push(() => bridge.kill());
  return bridge;
}

describe('the credential over HTTP+SSE', () => {
  it('runs the token command again after a 401 on the GET, and opens the stream with the new token', async () => {
    const rotating = await rotatingSseServer('sse-token-two-2222');
    const command = tokenCommand('sse-token-one-1111');
    const bridge = bridgeWith(rotating.server, command.args, command.env);
    // Once the first run (at start) has printed the old token, the next prints the one the server takes.
    await new Promise<void>((resolve) => {
      const check = () => (command.runs() >= 1 ? resolve() : setTimeout(check, 5));
      check();
    });
    command.rotate('sse-token-two-2222');
    bridge.send(initializeRequest(1));
    expect((await bridge.reply(1)).result).toEqual({ ok: 'initialize' });
    const gets = rotating.server.requests.filter((r) => r.method === 'GET').map((r) => r.headers.authorization);
    expect(gets).toEqual(['Bearer sse-token-one-1111', 'Bearer sse-token-two-2222']);
    expect(command.runs()).toBe(2);
  });

  it('renews after a 401 on a POST to the endpoint and posts the message once more with the new token', async () => {
    const rotating = await rotatingSseServer('sse-post-one-3333');
    const command = tokenCommand('sse-post-one-3333');
    const bridge = bridgeWith(rotating.server, command.args, command.env);
    bridge.send(initializeRequest(1));
    await bridge.reply(1);
    rotating.accept('sse-post-two-4444');
    command.rotate('sse-post-two-4444');
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect((await bridge.reply(2)).result).toEqual({ ok: 'tools/list' });
    expect(rotating.server.postsFor(2).map((r) => r.headers.authorization)).toEqual(['Bearer sse-post-one-3333', 'Bearer sse-post-two-4444']);
    expect(command.runs()).toBe(2);
    expect(bridge.stderr()).not.toMatch(/sse-post-(one|two)/);
  });
});
