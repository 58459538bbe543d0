// Servers that echo everything they receive, every way they can, against the built bin at
// --log-level trace: no 12-character piece of any secret the bridge knows, in any spelling the wire
// gives it, reaches stdout, stderr, the log file or doctor's reports.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, initializedNotification, initializeRequest, spawnBridge } from '../helpers/spawn-bridge.js';

const exec = promisify(execFile);

// Azure-style: `~` and `.` are what form encoding changes (`%7E`), `-` and `_` what the strict
// encoding of a Basic credential changes (RFC 6749 Appendix B).
const CLIENT_ID = 'echo-client:7';
const CLIENT_SECRET = 'Az8Q~secret.of-the_client~9f3kLm2Px';
const ACCESS_TOKEN = 'at-Kx9_vQ2-mZ7pL4wR8tY1uI6oP3aS5dF0gH';
const HEADER_SECRET = 'hk&<team>~key-7Gq2Lw9Zx4Vb1Nm';
const QUERY_SECRET = 'qk~9Qz.url-secret_77Hj3Kd8Lp';

/** Every spelling of `secret` the wire gives it, as the bridge sends it and a server may echo it. */
function spellingsOf(secret: string): string[] {
  const uri = encodeURIComponent(secret);
  const strict = uri.replace(/[-_.!~*'()]|%20/g, (part) => (part === '%20' ? '+' : `%${part.charCodeAt(0).toString(16).toUpperCase()}`));
  const json = JSON.stringify(secret).slice(1, -1);
  const goJson = json.replace(/[&<>]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  return [secret, uri, strict, json, goJson, form, JSON.stringify(json).slice(1, -1)];
}

const BASIC = Buffer.from(
  `${[CLIENT_ID, CLIENT_SECRET].map((part) => encodeURIComponent(part).replace(/[-_.!~*'()]|%20/g, (c) => (c === '%20' ? '+' : `%${c.charCodeAt(0).toString(16).toUpperCase()}`))).join(':')}`,
).toString('base64');

/** The 12-character pieces of every spelling of every secret, and of the Basic credential (the part after the client id's). */
function piecesOf(secrets: string[]): Set<string> {
  const pieces = new Set<string>();
  const spelled = [...secrets.flatMap(spellingsOf), BASIC.slice(Math.ceil(((encodeURIComponent(CLIENT_ID).length + 3) * 4) / 3))];
  for (const text of spelled) for (let i = 0; i + 12 <= text.length; i++) pieces.add(text.slice(i, i + 12));
  return pieces;
}

function expectNoPiece(where: string, text: string): void {
  const shown = [...piecesOf([CLIENT_SECRET, ACCESS_TOKEN, HEADER_SECRET, QUERY_SECRET])].filter((piece) => text.includes(piece));
  expect(shown, `${where} shows a piece of a secret`).toEqual([]);
}

interface EchoWorld {
  url: string;
  /** The next token request is refused with an error that echoes the whole request. */
  refuseNextToken: boolean;
  authMethod: 'client_secret_basic' | 'client_secret_post';
  close(): Promise<void>;
}

/** One loopback server playing an MCP server and its authorization server, each echoing what it receives. */
async function startEchoWorld(): Promise<EchoWorld> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const world: EchoWorld = {
    url: `${origin}/mcp?api_key=${encodeURIComponent(QUERY_SECRET)}`,
    refuseNextToken: false,
    authMethod: 'client_secret_basic',
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      // The secrets first, so no cut to an excerpt falls before them.
      const echo = `${req.headers.authorization ?? ''} ${String(req.headers['x-team-key'] ?? '')} ${req.url} ${text} ${JSON.stringify(req.headers)}`;
      const path = new URL(req.url ?? '/', origin).pathname;
      if (path === '/.well-known/oauth-protected-resource/mcp') return json(res, 200, { resource: `${origin}/mcp`, authorization_servers: [origin] });
      if (path === '/.well-known/oauth-authorization-server')
        return json(res, 200, {
          issuer: origin,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: [world.authMethod],
          code_challenge_methods_supported: ['S256'],
        });
      if (path === '/token') {
        if (world.refuseNextToken) {
          world.refuseNextToken = false;
          return json(res, 400, { error: 'invalid_request', error_description: `you sent ${echo}` });
        }
        return json(res, 200, { access_token: ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3600, echo });
      }
      if (path !== '/mcp') return json(res, 404, { error: echo });
      if (req.headers.authorization !== `Bearer ${ACCESS_TOKEN}`)
        return json(res, 401, { error: echo }, { 'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` });
      if (req.method !== 'POST') return res.writeHead(405, { allow: 'POST' }).end();
      const message = JSON.parse(text) as { id?: string | number; method: string; params?: { name?: string } };
      if (message.id === undefined) return res.writeHead(202).end();
      const reply = (result: unknown) => ({ jsonrpc: '2.0', id: message.id, result });
      if (message.method === 'initialize')
        return json(res, 200, reply({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: `echo ${echo}`, version: '1' } }));
      if (message.method === 'tools/list')
        return json(res, 200, reply({ tools: ['echo', 'fail', 'events'].map((name) => ({ name, description: echo, inputSchema: { type: 'object' } })) }));
      const tool = message.params?.name;
      if (tool === 'fail') return res.writeHead(500, { 'content-type': 'text/plain' }).end(`failed: ${echo}`);
      if (tool === 'events') {
        // An event that is not JSON, a server request whose id is the token, then the reply.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: not json ${echo}\n\n`);
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: ACCESS_TOKEN, method: 'roots/list' })}\n\n`);
        return res.end(`data: ${JSON.stringify(reply({ content: [{ type: 'text', text: echo }] }))}\n\n`);
      }
      return json(res, 200, reply({ content: [{ type: 'text', text: echo }], structuredContent: { echo } }));
    });
  });
  return world;
}

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function bridgeArgs(world: EchoWorld, logFile: string): string[] {
  return [
    '--url',
    world.url,
    '-H',
    'X-Team-Key: ${TEAM_KEY}',
    '--oauth-client-credentials',
    '--oauth-client-id',
    CLIENT_ID,
    '--allow-http',
    '--log-level',
    'trace',
    '--log-file',
    logFile,
  ];
}

describe('servers that echo everything they receive', () => {
  it('see no 12-character piece of any secret, in any spelling, in stdout, stderr, the log file or doctor’s text and JSON reports', async () => {
    const world = await startEchoWorld();
    cleanups.push(() => world.close());
    const dir = mkdtempSync(join(tmpdir(), 'fenbs-echo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const env = { TEAM_KEY: HEADER_SECRET, FENBS_MCP_OAUTH_CLIENT_SECRET: CLIENT_SECRET, FENBS_MCP_HOME: join(dir, 'state') };
    const outputs: [string, string][] = [];

    for (const authMethod of ['client_secret_basic', 'client_secret_post'] as const) {
      world.authMethod = authMethod;
      world.refuseNextToken = true;
      const logFile = join(dir, `${authMethod}.log`);
      const bridge = spawnBridge(bridgeArgs(world, logFile), { ...env, FENBS_MCP_HOME: join(dir, authMethod) });
      cleanups.push(() => bridge.kill());
      bridge.send(initializeRequest('refused'));
      const refused = await bridge.reply('refused', 30_000);
      expect(refused.error.message).toMatch(/\[REDACTED\]/);
      bridge.send(initializeRequest('init'));
      expect((await bridge.reply('init', 30_000)).result.protocolVersion).toBe('2025-06-18');
      bridge.send(initializedNotification);
      bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
      for (const name of ['echo', 'fail', 'events']) bridge.send({ jsonrpc: '2.0', id: name, method: 'tools/call', params: { name, arguments: {} } });
      expect((await bridge.reply('echo', 30_000)).result.content[0].text).toContain('[REDACTED]');
      expect((await bridge.reply('fail', 30_000)).error.data.bodyExcerpt).toContain('[REDACTED]');
      expect((await bridge.reply('events', 30_000)).result.content[0].text).toContain('[REDACTED]');
      await bridge.reply('list', 30_000);
      // The server request whose id is the token reached the client masked.
      expect(bridge.lines.some((line) => line.includes('"method":"roots/list"') && line.includes('[REDACTED]'))).toBe(true);
      bridge.end();
      await bridge.exited;
      outputs.push(
        [`${authMethod}: stdout`, bridge.lines.join('\n')],
        [`${authMethod}: stderr`, bridge.stderr()],
        [`${authMethod}: log file`, readFileSync(logFile, 'utf8')],
      );
    }

    // Refused (the authorization server echoes the request in its error), then signed in.
    for (const [authMethod, refuse] of [
      ['client_secret_basic', true],
      ['client_secret_post', true],
      ['client_secret_basic', false],
    ] as const) {
      for (const format of [[], ['--json']]) {
        world.authMethod = authMethod;
        world.refuseNextToken = refuse;
        const args = [BIN, 'doctor', ...bridgeArgs(world, join(dir, 'doctor.log')).slice(0, -4), ...format];
        const home = mkdtempSync(join(dir, 'doctor-'));
        const run = await exec(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env, FENBS_MCP_HOME: home } }).catch(
          (error: { stdout: string; stderr: string }) => error,
        );
        expect(run.stdout).toMatch(refuse ? /refused: invalid_request \(you sent .*\[REDACTED\]/ : /issued a token to echo-client:7/);
        outputs.push([`doctor ${authMethod} ${format.join(' ')}: stdout`, run.stdout], [`doctor ${authMethod} ${format.join(' ')}: stderr`, run.stderr]);
      }
    }

    for (const [where, text] of outputs) expectNoPiece(where, text);
  }, 120_000);
});
