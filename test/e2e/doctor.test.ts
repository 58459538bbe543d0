// `fenbs-mcp doctor` as a user runs it: one line per check, the failing one with a hint, an exit code.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestCertificates, freePort, result, sendJson, startMcpServer, type McpServer, type Route } from '../helpers/hardening-servers.js';
import { BIN } from '../helpers/spawn-bridge.js';

const exec = promisify(execFile);

async function doctor(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, [BIN, 'doctor', ...args], { env: { PATH: process.env.PATH ?? '', ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

/** The hardening server's default answer to tools/list is no tools/list result: this one is. */
const listsNoTools: Route = ({ res, message }) => message?.method === 'tools/list' && (sendJson(res, 200, result(message.id, { tools: [] })), true);

const servers: McpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe('fenbs-mcp doctor', () => {
  it('passes every check against the demo and exits 0', async () => {
    const { code, stdout } = await doctor(['--demo']);
    expect(code).toBe(0);
    for (const check of ['url', 'credential', 'tcp', 'token', 'protocol', 'tools', 'latency']) expect(stdout).toMatch(new RegExp(`^✓ ${check}`, 'm'));
    expect(stdout).toMatch(/2025-06-18 \(initialize handshake, with a session\)/);
    expect(stdout).toMatch(/4 tools listed/);
  });

  it('prints the same report as one JSON object with --json', async () => {
    const { code, stdout } = await doctor(['--demo', '--json']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({ ok: true, revision: '2025-06-18' });
    expect(report.checks.map((check: { name: string }) => check.name)).toEqual(['url', 'credential', 'tcp', 'token', 'protocol', 'tools', 'latency']);
  });

  it('fails the token check on a 401, shows the challenge and names the variable to fix, exit 3', async () => {
    const server = await startMcpServer({
      route: ({ res }) => {
        sendJson(
          res,
          401,
          { error: 'invalid_token' },
          { 'www-authenticate': 'Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource", error="invalid_token"' },
        );
        return true;
      },
    });
    servers.push(server);
    const { code, stdout } = await doctor(['--url', server.url.href], { FENBS_TOKEN: 'expired-token-1234' });
    expect(code).toBe(3);
    expect(stdout).toMatch(/^✗ token .*401/m);
    expect(stdout).toContain('resource_metadata=');
    expect(stdout).toMatch(/hint: .*FENBS_TOKEN/);
    expect(stdout).not.toContain('expired-token-1234');
  });

  it('names the credential it would use, a --token-command that ran, and never prints the token, exit 0', async () => {
    const token = 'doctor-command-token-2468';
    const server = await startMcpServer({
      route: (context) =>
        context.req.headers.authorization === `Bearer ${token}` ? listsNoTools(context) : (sendJson(context.res, 401, { error: 'invalid_token' }), true),
    });
    servers.push(server);
    const text = await doctor(['--url', server.url.href, '--token-command', `printf ${token}`, '--log-level', 'debug']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^✓ credential +--token-command \(ran, and printed a token\)$/m);
    expect(text.stdout).toMatch(/^✓ token +accepted \(from --token-command\): the server answered server\/discover$/m);
    const json = await doctor(['--url', server.url.href, '--token-command', `printf ${token}`, '--json']);
    expect(JSON.parse(json.stdout).checks[1]).toEqual({ name: 'credential', ok: true, detail: '--token-command (ran, and printed a token)', status: 'passed' });
    for (const output of [text.stdout, text.stderr, json.stdout, json.stderr]) expect(output).not.toContain(token);
  });

  it('fails the credential check of a --token-command that fails, with its exit code and stderr, exit 3', async () => {
    const server = await startMcpServer({ route: listsNoTools });
    servers.push(server);
    const { code, stdout } = await doctor(['--url', server.url.href, '--token-command', 'echo "account is not signed in" >&2; exit 6']);
    expect(code).toBe(3);
    expect(stdout).toMatch(/^✗ credential +--token-command exited with code 6: account is not signed in$/m);
    expect(stdout).toMatch(/hint: run the command in a terminal/);
  });

  it('names -H Authorization from the environment as the credential, exit 0', async () => {
    const server = await startMcpServer({ route: listsNoTools });
    servers.push(server);
    const { code, stdout } = await doctor(['--url', server.url.href, '-H', 'Authorization: token ${DOCTOR_GH_TOKEN}'], {
      DOCTOR_GH_TOKEN: 'doctor-gh-token-1357',
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^✓ credential +-H Authorization from \$DOCTOR_GH_TOKEN$/m);
    expect(stdout).not.toContain('doctor-gh-token-1357');
  });

  it('fails the TCP check where nothing listens, with a hint to check the port, exit 3', async () => {
    const port = await freePort();
    const { code, stdout } = await doctor(['--url', `http://127.0.0.1:${port}/mcp`]);
    expect(code).toBe(3);
    expect(stdout).toMatch(/^✗ tcp .*ECONNREFUSED/m);
    expect(stdout).toMatch(/hint: nothing is listening there/);
    expect(stdout).not.toMatch(/^✓ token/m);
  });

  it('fails the TLS check on a certificate from an unknown CA, names --ca-file, and passes with it', async () => {
    const certificates = createTestCertificates();
    const server = await startMcpServer({ tls: { key: certificates.key, cert: certificates.cert }, route: listsNoTools });
    servers.push(server);
    const untrusted = await doctor(['--url', server.url.href]);
    expect(untrusted.code).toBe(3);
    expect(untrusted.stdout).toMatch(/^✗ tls /m);
    expect(untrusted.stdout).toMatch(/hint: .*--ca-file/);
    const trusted = await doctor(['--url', server.url.href, '--ca-file', certificates.caFile]);
    expect(trusted.stdout).toMatch(/^✓ tls .*issued by fenbs-mcp test ca/m);
    expect(trusted.code).toBe(0);
  });

  it('recognises a 2026-07-28 server by server/discover and lists its tools with the modern headers', async () => {
    const server = await startMcpServer({
      route: ({ res, message, req }) => {
        if (message?.method === 'server/discover') {
          sendJson(
            res,
            200,
            result(message.id, {
              supportedVersions: ['2026-07-28'],
              capabilities: { tools: {} },
              resultType: 'complete',
              ttlMs: 0,
              cacheScope: 'public',
              _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'modern-board', version: '2.0.0' } },
            }),
          );
          return true;
        }
        if (message?.method === 'tools/list') {
          expect(req.headers['mcp-protocol-version']).toBe('2026-07-28');
          sendJson(
            res,
            200,
            result(message.id, { tools: [{ name: 'a', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' }),
          );
          return true;
        }
        return false;
      },
    });
    servers.push(server);
    const { code, stdout } = await doctor(['--url', server.url.href]);
    expect(stdout).toMatch(/^✓ protocol +2026-07-28 \(server\/discover, no handshake\); versions 2026-07-28; server modern-board 2\.0\.0; capabilities tools/m);
    expect(stdout).toMatch(/^✓ tools +1 tool listed/m);
    expect(code).toBe(0);
    expect(server.requests.some((request) => request.method !== 'POST')).toBe(false);
  });

  it('leaves no probe session behind on a 2025 server: it sends DELETE with the session id', async () => {
    const server = await startMcpServer({ sessions: true, route: listsNoTools });
    servers.push(server);
    const { code } = await doctor(['--url', server.url.href]);
    expect(code).toBe(0);
    const deletes = server.requests.filter((request) => request.method === 'DELETE');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.headers['mcp-session-id']).toBeDefined();
  });

  it('fails a plain JSON echo server with a hint that the URL is no MCP endpoint, exit 3', async () => {
    const server = await startMcpServer({ route: ({ res, message }) => (sendJson(res, 200, result(message?.id ?? null, message)), true) });
    servers.push(server);
    const { code, stdout } = await doctor(['--url', server.url.href]);
    expect(code).toBe(3);
    expect(stdout).toMatch(/^✗ protocol +the initialize result has no protocolVersion, capabilities, serverInfo\.name/m);
    expect(stdout).toMatch(/hint: this URL does not look like an MCP endpoint/);
  });

  it('gives up on a server that never answers at --request-timeout and says so', async () => {
    const server = await startMcpServer({ route: () => true });
    servers.push(server);
    const started = performance.now();
    const { code, stdout } = await doctor(['--url', server.url.href, '--request-timeout', '300']);
    expect(code).toBe(3);
    expect(stdout).toMatch(/^✗ connect +no answer to server\/discover within 300 ms \(--request-timeout\)/m);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('exits 2 on a usage error without running any check', async () => {
    const { code, stdout, stderr } = await doctor(['--url', 'not a url']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/invalid URL/);
  });
});
