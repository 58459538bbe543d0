import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EnvHttpProxyAgent } from '../src/undici-parts.js';
import { LARGE_BODY_CHARS, sendHttp, utf8Slices } from '../src/remote.js';

describe('a large request body', () => {
  it('is encoded slice by slice into exactly the bytes of the whole text, a surrogate pair never split', () => {
    const text = `${'a'.repeat(3)}😀${'b'.repeat(2)}😀é`;
    for (const size of [1, 2, 3, 4, 5, 100]) {
      const slices = [...utf8Slices(text, size)];
      expect(Buffer.concat(slices).equals(Buffer.from(text, 'utf8'))).toBe(true);
      expect([...utf8Slices(text, size)]).toHaveLength(slices.length);
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
      const exchange = await sendHttp(dispatcher, { method: 'POST', url, headers: { 'content-type': 'application/json' }, body: text, signal: new AbortController().signal });
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
