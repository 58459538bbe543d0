// End-to-end: the built bin follows a trailing-slash 308, refuses a cross-origin 307, and keeps a cookie-pinned session on one instance.

import { afterEach, describe, expect, it } from 'vitest';
import { openSession, serversForFile } from '../helpers/hardening-servers.js';
import { spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';
import { BALANCER_COOKIE, startBalancer } from '../helpers/sticky-balancer.js';

const { serve, track } = serversForFile();
const TOKEN = 'e2e-redirect-token-0123456789';
const running: BridgeProcess[] = [];
afterEach(() => {
  for (const bridge of running.splice(0)) bridge.kill();
});

function start(url: URL, level = 'info'): BridgeProcess {
  const bridge = spawnBridge(['--url', url.href], { FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: level });
  running.push(bridge);
  return bridge;
}

describe('redirects and cookies through the built bin', () => {
  it('follows a trailing-slash 308 once and goes straight to the new URL afterwards', async () => {
    const paths: string[] = [];
    const server = await serve({
      sessions: true,
      route: ({ req, res }) => {
        paths.push(`${req.method} ${req.url}`);
        if (req.url !== '/mcp') return false;
        res.writeHead(308, { location: '/mcp/' }).end();
        return true;
      },
    });
    const bridge = start(server.url);
    await openSession(bridge, server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    expect((await bridge.reply(2)).result.content[0].text).toBe('ok echo');
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
    expect(paths.filter((path) => path.endsWith(' /mcp'))).toEqual(['POST /mcp']);
    expect(paths).toContain('DELETE /mcp/');
    expect(bridge.stderr().match(/moved the endpoint/g)).toHaveLength(1);
  });

  it('refuses a 307 to another port; the other server gets nothing', async () => {
    const other = await serve();
    const server = await serve({ route: ({ res }) => (res.writeHead(307, { location: `http://127.0.0.1:${other.port}/mcp` }).end(), true) });
    const bridge = start(server.url);
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await bridge.reply(1)).error.data).toMatchObject({ bridgeCode: 'REDIRECT_REFUSED', status: 307 });
    expect(other.requests).toEqual([]);
  });

  it('keeps a session on one instance behind a cookie-pinning balancer, with the cookie value masked in the debug log', async () => {
    const instances = [await serve({ sessions: true }), await serve({ sessions: true })];
    const balancer = await startBalancer(instances, track);
    const bridge = start(balancer.url, 'debug');
    await openSession(bridge, instances[0]!);
    for (const id of [2, 3]) bridge.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `t${id}`, arguments: {} } });
    for (const id of [2, 3]) expect((await bridge.reply(id)).result).toBeDefined();
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
    expect(instances[1]!.requests).toEqual([]);
    expect(balancer.seen.slice(1).every((s) => s.cookie === `${BALANCER_COOKIE}=${balancer.values[0]}`)).toBe(true);
    expect(bridge.stderr()).toContain('cookie stored for this run');
    for (const value of balancer.values) expect(bridge.stderr()).not.toContain(value);
  });
});
