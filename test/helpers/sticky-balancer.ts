// A cookie-pinning load balancer on loopback, in front of MCP server instances that each keep their own sessions.

import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from './hardening-servers.js';

/** The cookie that pins a client to an instance. */
export const BALANCER_COOKIE = 'lb_route';

export interface Balancer {
  url: URL;
  /** The Cookie header of each request it took, and the instance it sent the request to. */
  seen: { cookie: string | undefined; instance: number }[];
  /** The cookie value that pins to each instance. */
  values: string[];
}

/**
 * A load balancer on loopback in front of `instances`: a request whose cookie names an instance
 * goes there; any other goes to the next instance in turn and gets a cookie pinning it there. The
 * instances keep their own sessions, so a request that lands on the wrong one is refused (404).
 */
export async function startBalancer(instances: readonly McpServer[], track: (cleanup: () => unknown) => void): Promise<Balancer> {
  const values = instances.map((_, i) => `instance-${i}.${randomBytes(12).toString('hex')}`);
  const seen: Balancer['seen'] = [];
  let next = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const cookie = req.headers.cookie;
    const pinned = values.findIndex((value) => cookie?.split(/;\s*/).includes(`${BALANCER_COOKIE}=${value}`));
    const instance = pinned === -1 ? next++ % instances.length : pinned;
    seen.push({ cookie, instance });
    const upstream = request({ host: '127.0.0.1', port: instances[instance]!.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const headers = { ...answer.headers };
      if (pinned === -1) headers['set-cookie'] = [`${BALANCER_COOKIE}=${values[instance]}; Path=/; HttpOnly; SameSite=Lax`];
      res.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  track(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), seen, values };
}
