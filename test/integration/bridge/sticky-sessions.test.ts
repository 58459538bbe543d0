// Sticky sessions: cookies from the endpoint's origin go back to it for the run, so a cookie-pinning load balancer keeps a session on one instance.

import { describe, expect, it } from 'vitest';
import { openSession, sendJson, serversForFile, type Route } from '../../helpers/hardening-servers.js';
import { BALANCER_COOKIE as COOKIE, startBalancer } from '../../helpers/sticky-balancer.js';
import { startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';

const { serve, track } = serversForFile();
const TOKEN = 'sticky-test-token-0123456789';

function bridgeTo(url: URL, level = 'info'): InProcessBridge {
  const bridge = startInProcessBridge(['--url', url.href], { FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: level });
  track(() => bridge.kill());
  return bridge;
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

describe('a cookie-pinning load balancer in front of two instances', () => {
  it('fails a session that is not pinned: without the cookie, the second request lands on the other instance', async () => {
    const balancer = await startBalancer([await serve({ sessions: true }), await serve({ sessions: true })], track);
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(balancer.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
      });
    const first = await post(initialize);
    const session = first.headers.get('mcp-session-id')!;
    await first.text();
    const second = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' });
    await second.text();
    expect(second.status).toBe(404);
    expect(balancer.seen.map((s) => s.instance)).toEqual([0, 1]);
  });

  it('works through the bridge: every request after the first carries the cookie and reaches the same instance', async () => {
    const instances = [await serve({ sessions: true }), await serve({ sessions: true })];
    const balancer = await startBalancer(instances, track);
    const bridge = bridgeTo(balancer.url);
    await openSession(bridge, instances[0]!);
    for (const id of [2, 3, 4, 5]) bridge.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `t${id}`, arguments: {} } });
    for (const id of [2, 3, 4, 5]) expect((await bridge.reply(id)).result.content[0].text).toBe(`ok t${id}`);
    bridge.end();
    await bridge.exited;
    expect(balancer.seen[0]).toEqual({ cookie: undefined, instance: 0 });
    const later = balancer.seen.slice(1);
    expect(later.length).toBeGreaterThanOrEqual(5); // initialized and four calls (and the DELETE at the end)
    for (const request of later) expect(request).toEqual({ cookie: `${COOKIE}=${balancer.values[0]}`, instance: 0 });
    expect(instances[1]!.requests).toEqual([]);
  });

  it('masks the cookie value in the debug log and in what the client sees, and names the cookie only', async () => {
    // An instance whose error page echoes the request's cookies, as some frameworks' debug pages do.
    const echo: Route = ({ req, res, message }) => {
      if (message?.params?.name !== 'leak' && message?.method !== 'notifications/leak') return false;
      sendJson(res, 500, { error: `internal error; request cookies: ${req.headers.cookie ?? ''}` });
      return true;
    };
    const instances = [await serve({ sessions: true, route: echo }), await serve({ sessions: true, route: echo })];
    const balancer = await startBalancer(instances, track);
    const bridge = bridgeTo(balancer.url, 'debug');
    await openSession(bridge, instances[0]!);
    bridge.send({ jsonrpc: '2.0', id: 'leak', method: 'tools/call', params: { name: 'leak', arguments: {} } });
    const reply = await bridge.reply('leak');
    expect(reply.error.data.bodyExcerpt).toContain(`${COOKIE}=[REDACTED]`);
    // A notification the server refuses is logged with the body it sent.
    bridge.send({ jsonrpc: '2.0', method: 'notifications/leak' });
    await waitForLog(bridge, /did not accept the message/);
    const log = bridge.stderr();
    expect(log).toContain('"cookie":"lb_route"');
    expect(log).toContain('cookie stored for this run');
    expect(log).toContain(`${COOKIE}=[REDACTED]`);
    for (const value of balancer.values) {
      expect(log).not.toContain(value);
      expect(bridge.lines.join('\n')).not.toContain(value);
    }
  });
});

describe('cookies and other origins', () => {
  it('sends a cookie set on a same-origin 307 with the followed request, and never to the origin a later redirect names', async () => {
    const other = await serve();
    const cookies: (string | undefined)[] = [];
    const route: Route = ({ req, res, message }) => {
      cookies.push(req.headers.cookie);
      if (req.url === '/mcp') {
        res.writeHead(307, { location: '/mcp/', 'set-cookie': 'sid=from-the-redirect-0123; Path=/' }).end();
        return true;
      }
      if (message?.method === 'tools/call') {
        res.writeHead(307, { location: `http://127.0.0.1:${other.port}/mcp/` }).end();
        return true;
      }
      return false;
    };
    const server = await serve({ route });
    const bridge = bridgeTo(server.url);
    bridge.send(initialize);
    expect((await bridge.reply(1)).result).toBeDefined();
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x', arguments: {} } });
    expect((await bridge.reply(2)).error.data.bridgeCode).toBe('REDIRECT_REFUSED');
    expect(cookies).toEqual([undefined, 'sid=from-the-redirect-0123', 'sid=from-the-redirect-0123']);
    expect(other.requests).toEqual([]);
  });
});
