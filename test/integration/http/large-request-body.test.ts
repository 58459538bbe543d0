import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EnvHttpProxyAgent } from '../../../src/http/undici-parts.js';
import { LARGE_BODY_CHARS, sendHttp, utf8Slices } from '../../../src/http/send.js';

describe('a large request body', () => {
  it('is encoded slice by slice into exactly the bytes of the whole text, a surrogate pair never split', () => {
    const text = `${'a'.repeat(3)}😀${'b'.repeat(2)}😀é`;
    for (const size of [1, 2, 3, 4, 5, 100]) {
      const slices = [...utf8Slices(text, size)];
      expect(Buffer.concat(slices).equals(Buffer.from(text, 'utf8'))).toBe(true);
      expect([...utf8Slices(text, size)]).toHaveLength(slices.length);
    }
  });

  it('given as pieces of bytes (a large stdin line), reaches the server byte for byte with their total as its Content-Length, and can be sent again', async () => {
    const received: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(202).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const dispatcher = new EnvHttpProxyAgent({ httpProxy: '', httpsProxy: '', noProxy: '' });
    try {
      const whole = Buffer.from(`{"blob":"${'😀é'.repeat(100_000)}"}`);
      const pieces = [whole.subarray(0, 1), whole.subarray(1, 65_537), whole.subarray(65_537)];
      const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
      for (let round = 0; round < 2; round++) {
        const exchange = await sendHttp(dispatcher, {
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json' },
          body: pieces,
          signal: new AbortController().signal,
        });
        for await (const chunk of exchange.body) expect(chunk).toBeDefined();
        expect(exchange.status).toBe(202);
      }
      expect(received).toHaveLength(2);
      for (const { headers, body } of received) {
        expect(headers['content-length']).toBe(String(whole.length));
        expect(headers['transfer-encoding']).toBeUndefined();
        expect(body.equals(whole)).toBe(true);
      }
    } finally {
      await dispatcher.close();
      server.close();
    }
  });

  it('reaches the server byte for byte with its Content-Length', async () => {
    let received: { headers: IncomingHttpHeaders; body: Buffer } | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received = { headers: req.headers, body: Buffer.concat(chunks) };
        res.writeHead(202).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const dispatcher = new EnvHttpProxyAgent({ httpProxy: '', httpsProxy: '', noProxy: '' });
    try {
      const text = `{"blob":"${'😀é'.repeat(LARGE_BODY_CHARS / 2)}"}`;
      const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
      const exchange = await sendHttp(dispatcher, {
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        body: text,
        signal: new AbortController().signal,
      });
      for await (const chunk of exchange.body) expect(chunk).toBeDefined();
      expect(exchange.status).toBe(202);
      expect(received?.headers['content-length']).toBe(String(Buffer.byteLength(text)));
      expect(received?.headers['transfer-encoding']).toBeUndefined();
      expect(received?.body.equals(Buffer.from(text, 'utf8'))).toBe(true);
    } finally {
      await dispatcher.close();
      server.close();
    }
  });
});
