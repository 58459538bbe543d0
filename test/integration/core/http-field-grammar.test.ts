// The header names undici refuses to send are exactly the ones the bridge refuses at start.

import { describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { UNSENDABLE_HEADERS } from '../../../src/core/http-field-grammar.js';
import { createDispatcher } from '../../../src/http/dispatcher.js';
import { sendHttp } from '../../../src/http/send.js';

describe('UNSENDABLE_HEADERS', () => {
  it("lists exactly the names undici refuses: each of undici's well-known header names, and the hop-by-hop ones, sent through the bridge's dispatcher to a loopback server", async () => {
    // The list is undici's own (lib/core/constants.js), so a new undici brings its new names along.
    const { wellknownHeaderNames } = createRequire(import.meta.url)('undici/lib/core/constants.js') as { wellknownHeaderNames: readonly string[] };
    const extra = [
      'Expect',
      'Keep-Alive',
      'Proxy-Connection',
      'TE',
      'Trailer',
      'Transfer-Encoding',
      'Upgrade',
      'HTTP2-Settings',
      'Forwarded',
      'Via',
      'Max-Forwards',
      'Priority',
      'Early-Data',
      'Mcp-Session-Id',
      'X-Team',
    ];
    const candidates = [...new Set([...wellknownHeaderNames, ...extra].map((name) => name.toLowerCase()))];
    expect(candidates.length).toBeGreaterThan(90);
    const received: string[] = [];
    const server = createServer((req, res) => {
      received.push(String(req.headers['x-candidate']));
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    const dispatcher = createDispatcher({ connectTimeoutMs: 5_000, env: {} });
    const refused: string[] = [];
    try {
      for (const name of candidates) {
        // Sent as the bridge sends a message: a POST with a JSON body, the candidate beside the bridge's own headers.
        const headers = { 'x-candidate': name, 'content-type': 'application/json', accept: 'application/json, text/event-stream', [name]: '1' };
        const exchange = await sendHttp(dispatcher, {
          method: 'POST',
          url,
          headers,
          body: '{"jsonrpc":"2.0","method":"ping"}',
          signal: new AbortController().signal,
        }).catch(() => undefined);
        if (exchange === undefined) refused.push(name);
        else for await (const chunk of exchange.body) void chunk;
      }
    } finally {
      await dispatcher.close();
      server.close();
    }
    expect(refused.sort()).toEqual([...UNSENDABLE_HEADERS.keys()].sort());
    // Every other candidate reached the server.
    expect(received.length + refused.length).toBe(candidates.length);
  });
});
