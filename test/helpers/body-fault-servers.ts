// Replies whose bodies the bridge must decode, cut short or give up on: gzip past a limit, unknown encodings, open gzip streams.

import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { constants, createGzip, gzipSync } from 'node:zlib';

/** Hex of random bytes: text that gzip shrinks only to about half, so a long decoded body is also long on the wire. */
export function incompressibleText(chars: number): string {
  return randomBytes(Math.ceil(chars / 2))
    .toString('hex')
    .slice(0, chars);
}

/**
 * Megabytes of text whose gzip is about 110 KB, nearly all of it an incompressible tail: the first
 * 64 KB read from the socket already decode past any small limit, while the rest of the compressed
 * body still fits undici's 64 KiB body buffer. The HTTP exchange is then complete but its body has
 * not ended when the bridge gives up on it, the case in which undici attaches no 'error' listener
 * of its own. (A tail much larger keeps the exchange incomplete; much smaller, the body ends first.)
 */
export function frontLoadedText(headChars = 4 * 1024 * 1024): string {
  return 'all work and no play '.repeat(Math.ceil(headChars / 21)).slice(0, headChars) + incompressibleText(200_000);
}

/** A JSON-RPC result for `id` whose text is `text`. */
export function resultWithText(id: unknown, text: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
}

/** A whole body with `Content-Encoding: gzip` and its compressed Content-Length. */
export function sendGzip(res: ServerResponse, status: number, contentType: string, text: string): void {
  const body = gzipSync(Buffer.from(text, 'utf8'));
  res.writeHead(status, { 'content-type': contentType, 'content-encoding': 'gzip', 'content-length': body.length });
  res.end(body);
}

/**
 * Bytes of the unusable bodies below: past undici's 64 KiB body buffer, so an HTTP client that
 * neither reads nor destroys such a body keeps its connection paused, mid-response, for good.
 */
export const UNUSABLE_BODY_BYTES = 256 * 1024;

/** A JSON reply in an encoding no Node decoder knows (RFC 9110 §8.4: the recipient cannot decode it). */
export function sendUnknownEncoding(res: ServerResponse, id: unknown): void {
  const body = Buffer.from(resultWithText(id, incompressibleText(UNUSABLE_BODY_BYTES)), 'utf8');
  res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd', 'content-length': body.length });
  res.end(body);
}

/** A JSON reply that says gzip but whose bytes are not gzip: decoding fails at the first byte. */
export function sendCorruptGzip(res: ServerResponse, id: unknown): void {
  const body = Buffer.from(resultWithText(id, incompressibleText(UNUSABLE_BODY_BYTES)), 'utf8');
  res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
  res.end(body);
}

export interface GzipEventStream {
  /** Compresses `text` into the stream and flushes it, so the client can decode it at once. */
  send(text: string): Promise<void>;
  /** Resolves when the client closed the connection. */
  closed: Promise<void>;
}

/**
 * Opens a 200 `text/event-stream` with `Content-Encoding: gzip` that stays open until the client
 * closes it (a server that never ends the stream after the response).
 */
export function openGzipEventStream(res: ServerResponse): GzipEventStream {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip', 'cache-control': 'no-cache' });
  const gzip = createGzip();
  gzip.on('error', () => undefined);
  gzip.pipe(res);
  const closed = new Promise<void>((resolve) =>
    res.on('close', () => {
      gzip.destroy();
      resolve();
    }),
  );
  return {
    closed,
    send: (text) =>
      new Promise<void>((resolve) => {
        if (res.destroyed) return resolve();
        gzip.write(text);
        gzip.flush(constants.Z_SYNC_FLUSH, () => resolve());
      }),
  };
}
