// The decoder for a response's Content-Encoding: gzip, deflate and br; identity passes; anything else is refused.

import { createRequire } from 'node:module';
import type { Transform } from 'node:stream';
import type * as Zlib from 'node:zlib';

// node:zlib is loaded the first time a server compresses a reply (the bridge never asks it to), not at start-up.
const requireBuiltin = createRequire(import.meta.url);
const zlib = () => requireBuiltin('node:zlib') as typeof Zlib;

/** The decoder for a Content-Encoding: null for identity, undefined for one the bridge cannot decode. */
export function decoderFor(encoding: string): Transform | null | undefined {
  switch (encoding) {
    case 'identity':
    case '':
      return null;
    case 'gzip':
    case 'x-gzip':
      return zlib().createGunzip();
    case 'deflate':
      return zlib().createInflate();
    case 'br':
      return zlib().createBrotliDecompress();
    default:
      return undefined;
  }
}
