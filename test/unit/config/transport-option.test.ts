// --transport: Streamable HTTP with the automatic fallback to HTTP+SSE unless the user names one.

import { describe, expect, it } from 'vitest';
import { createConfig, type RawOptions } from '../../../src/config/config.js';
import { UsageError } from '../../../src/core/errors.js';

const make = (options: RawOptions) =>
  createConfig({
    options,
    env: { FENBS_TOKEN: 'tok' },
    readTextFile: () => {
      throw new Error('no files here');
    },
  });

describe('--transport', () => {
  it('defaults to auto and takes streamable-http and sse, in any case', () => {
    expect(make({}).transport).toBe('auto');
    expect(make({ transport: 'Streamable-HTTP' }).transport).toBe('streamable-http');
    expect(make({ transport: 'SSE' }).transport).toBe('sse');
  });

  it('refuses any other mode, naming the three', () => {
    expect(() => make({ transport: 'websocket' })).toThrow(UsageError);
    expect(() => make({ transport: 'websocket' })).toThrow('--transport must be auto, streamable-http or sse, got "websocket"');
  });
});
