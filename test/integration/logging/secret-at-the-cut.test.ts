// A secret lying across every cut the bridge makes of server text: masked whole before the cut, so not even its first characters reach stdout, the log or doctor's reports.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { reportDoctor } from '../../../src/doctor/report.js';
import { createRedactor } from '../../../src/logging/redactor.js';
import { BODY_EXCERPT_CHARS, LOG_EXCERPT_CHARS, SERVER_WORDS_CHARS } from '../../../src/logging/outgoing-text.js';
import { result, sendSse, sseEvent, startMcpServer, type McpServer, type Route } from '../../helpers/hardening-servers.js';
import { openSession, startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { startScriptedAuthorization } from '../../helpers/oauth-servers.js';

/** A bearer token and a client secret of a realistic length; a leak would show their first characters. */
const TOKEN = 'tok-4f1c0e2b9a7d46c8b3e5a1f0d9c8b7a6e5f4d3c2';
const CLIENT_SECRET = 'cs-9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d';
/** What would be left of a secret cut in half: its first 12 characters. */
const frontOf = (secret: string) => secret.slice(0, 12);

/** Text whose `cut`-th character falls inside `secret`, with `before` characters of it kept before the cut. */
function across(cut: number, secret: string, before = 14): string {
  return `${'x'.repeat(cut - before)}${secret} and then some more words after it`;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(route: Route): Promise<McpServer> {
  const server = await startMcpServer({ sessions: true, route });
  cleanups.push(() => server.close());
  return server;
}

function bridgeTo(server: McpServer): InProcessBridge {
  const bridge = startInProcessBridge(['--url', server.url.href, '--log-level', 'debug'], { FENBS_TOKEN: TOKEN });
  cleanups.push(() => bridge.kill());
  return bridge;
}

/** Everything the bridge wrote: stdout and the log (which the CLI also writes to --log-file). */
function everything(bridge: InProcessBridge): string {
  return `${bridge.lines.join('\n')}\n${bridge.stderr()}`;
}

const call = (id: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: {} } });

describe('a secret across the cut of a server text', () => {
  it('is not shown in part when the 2025 listen stream is refused with it in the body (log excerpt)', async () => {
    const server = await serve(({ req, res }) => {
      if (req.method !== 'GET') return false;
      res.writeHead(500, { 'content-type': 'text/plain' }).end(across(LOG_EXCERPT_CHARS, TOKEN));
      return true;
    });
    const bridge = await openSession(bridgeTo(server), server);
    await waitForLog(bridge, /listen stream refused/);
    expect(everything(bridge)).not.toContain(frontOf(TOKEN));
    expect(bridge.stderr()).toContain('[REDACTED]');
  });

  it('is not shown in part when an event of a request stream is not JSON (log excerpt)', async () => {
    const server = await serve(({ message, res }) => {
      if (message?.method !== 'tools/call') return false;
      void sendSse(res, `data: ${across(BODY_EXCERPT_CHARS, TOKEN)}\n\n${sseEvent(result(message.id, { content: [] }))}`);
      return true;
    });
    const bridge = await openSession(bridgeTo(server), server);
    bridge.send(call('not-json'));
    expect((await bridge.reply('not-json')).result).toEqual({ content: [] });
    await waitForLog(bridge, /not JSON; skipped/);
    expect(everything(bridge)).not.toContain(frontOf(TOKEN));
    expect(bridge.stderr()).toContain('[REDACTED]');
  });

  it('is not shown in part when resuming a cut stream is refused with it in the body (bodyExcerpt on stdout)', async () => {
    const server = await serve(({ req, message, res }) => {
      if (req.method === 'GET' && req.headers['last-event-id'] !== undefined) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(across(BODY_EXCERPT_CHARS, TOKEN));
        return true;
      }
      if (message?.method !== 'tools/call') return false;
      // One event with an id, then the stream ends without the response: the bridge resumes.
      void sendSse(res, `id: e1\n${sseEvent({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}`);
      return true;
    });
    const bridge = await openSession(bridgeTo(server), server);
    bridge.send(call('resumed'));
    const reply = await bridge.reply('resumed');
    expect(everything(bridge)).not.toContain(frontOf(TOKEN));
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_STREAM_ENDED', bodyExcerpt: expect.stringContaining('[REDACTED]') });
  });

  it('is not shown in part when a JSON reply that answers something else holds it past 4 KiB of whitespace (bodyExcerpt on stdout)', async () => {
    // The whitespace folds away in the excerpt, so what lies past 4 KiB of the body comes within its cut.
    const prefix = '{"jsonrpc":"2.0","id":"someone-else","result":{"note":"';
    const body = `${prefix}${' '.repeat(4096 - prefix.length - 12)}${TOKEN}"}}`;
    const server = await serve(({ message, res }) => {
      if (message?.method !== 'tools/call') return false;
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return true;
    });
    const bridge = await openSession(bridgeTo(server), server);
    bridge.send(call('other'));
    const reply = await bridge.reply('other');
    expect(everything(bridge)).not.toContain(frontOf(TOKEN));
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_BAD_REPLY', bodyExcerpt: expect.stringContaining('[REDACTED]') });
  });

  it('is not shown in part when the read limit of an error body cuts it, after copies of it that masking shrinks (bodyExcerpt on stdout)', async () => {
    // A long token (an OAuth access token may be kilobytes), sent back whole 16 times and cut at
    // ERROR_BODY_MAX_BYTES: masked, the copies shrink to a few characters each, and the front of
    // the cut one would come inside the excerpt.
    const long = `tok-${'0123456789abcdef'.repeat(250)}`;
    const server = await serve(({ message, res }) => {
      if (message?.method !== 'tools/call') return false;
      res.writeHead(502, { 'content-type': 'text/plain' }).end(`${`${long} `.repeat(16)}${long}${long}`);
      return true;
    });
    const bridge = startInProcessBridge(['--url', server.url.href], { FENBS_TOKEN: long });
    cleanups.push(() => bridge.kill());
    await openSession(bridge, server);
    bridge.send(call('limit'));
    const reply = await bridge.reply('limit');
    expect(everything(bridge)).not.toContain(frontOf(long));
    expect(reply.error.data).toMatchObject({
      bridgeCode: 'REMOTE_HTTP_STATUS',
      bodyExcerpt: expect.stringMatching(/^(\[REDACTED\] ){16}$|^(\[REDACTED\] )+\[REDACTED\]…?$/),
    });
  });

  it('is not shown in part when re-initializing an expired session is refused with it in the body (bodyExcerpt on stdout)', async () => {
    let expired = false;
    const server = await serve(({ message, res }) => {
      if (message?.method === 'tools/call' && !expired) {
        expired = true;
        res.writeHead(404).end();
        return true;
      }
      if (message?.method !== 'initialize' || !expired) return false;
      res.writeHead(500, { 'content-type': 'text/plain' }).end(across(LOG_EXCERPT_CHARS, TOKEN));
      return true;
    });
    const bridge = await openSession(bridgeTo(server), server);
    bridge.send(call('healed'));
    const reply = await bridge.reply('healed');
    expect(everything(bridge)).not.toContain(frontOf(TOKEN));
    expect(JSON.stringify(reply.error.data)).toContain('[REDACTED]');
  });

  it('is not shown in part when an error status carries it (bodyExcerpt on stdout)', async () => {
    const server = await serve(({ message, res }) => {
      if (message?.method !== 'tools/call') return false;
      res.writeHead(502, { 'content-type': 'text/plain' }).end(across(BODY_EXCERPT_CHARS, TOKEN));
      return true;
    });
    const bridge = await openSession(bridgeTo(server), server);
    bridge.send(call('status'));
    const reply = await bridge.reply('status');
    expect(everything(bridge)).not.toContain(frontOf(TOKEN));
    expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', bodyExcerpt: expect.stringContaining('[REDACTED]') });
  });
});

describe('a client secret the authorization server echoes across the cut of its error', () => {
  /** An authorization server that refuses the client credentials, quoting the secret it was sent. */
  async function echoingServer() {
    const as = await startScriptedAuthorization(
      () => ({ token_endpoint_auth_methods_supported: ['client_secret_post'], grant_types_supported: ['client_credentials'] }),
      (method, path, form) =>
        method === 'POST' && path === '/token'
          ? { status: 400, body: { error: 'invalid_client', error_description: across(SERVER_WORDS_CHARS, form.get('client_secret') ?? 'none') } }
          : undefined,
    );
    cleanups.push(() => as.close());
    const home = mkdtempSync(join(tmpdir(), 'fenbs-cut-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
    return { as, env: { FENBS_MCP_HOME: join(home, 'state'), FENBS_MCP_OAUTH_CLIENT_SECRET: CLIENT_SECRET } };
  }

  it('is not shown in part in the request’s error on stdout or in the log', async () => {
    const { as, env } = await echoingServer();
    const bridge = startInProcessBridge(['--url', as.mcpUrl, '--oauth-client-credentials', '--oauth-client-id', 'machine', '--log-level', 'debug'], env);
    cleanups.push(() => bridge.kill());
    bridge.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const reply = await bridge.reply('init', 20_000);
    expect(everything(bridge)).not.toContain(frontOf(CLIENT_SECRET));
    expect(reply.error).toMatchObject({ data: { bridgeCode: 'AUTH_REQUIRED' }, message: expect.stringContaining('[REDACTED]') });
  });

  it('is not shown in part in doctor’s text or JSON report', async () => {
    const { as, env } = await echoingServer();
    const config = createConfig({
      options: { url: as.mcpUrl, oauthClientCredentials: true, oauthClientId: 'machine' },
      env,
      readTextFile: () => '',
    });
    for (const json of [false, true]) {
      let printed = '';
      const sink = { write: (text: string) => (printed += text) };
      const report = await reportDoctor(config, env, { stdout: sink, stderr: sink, json, redact: createRedactor([CLIENT_SECRET]) });
      expect(printed).not.toContain(frontOf(CLIENT_SECRET));
      expect(JSON.stringify(report)).not.toContain(frontOf(CLIENT_SECRET));
      expect(report.checks.find((check) => check.name === 'oauth grant')).toMatchObject({ ok: false, detail: expect.stringContaining('[REDACTED]') });
    }
  });
});
