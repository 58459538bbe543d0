// --keep-alive: off unless asked for, in milliseconds, never more often than once a second.

import { describe, expect, it } from 'vitest';
import { createConfig, MAX_TIMEOUT_MS, MIN_KEEP_ALIVE_MS, type RawOptions } from '../../../src/config/config.js';
import { UsageError } from '../../../src/core/errors.js';

const make = (options: RawOptions) =>
  createConfig({
    options,
    env: { FENBS_TOKEN: 'tok' },
    readTextFile: () => {
      throw new Error('no files here');
    },
  });

describe('--keep-alive', () => {
  it('is off by default and takes 0 as off', () => {
    expect(make({}).keepAliveMs).toBe(0);
    expect(make({ keepAlive: '0' }).keepAliveMs).toBe(0);
  });

  it('takes a whole number of milliseconds from the minimum up to the longest timer', () => {
    expect(make({ keepAlive: String(MIN_KEEP_ALIVE_MS) }).keepAliveMs).toBe(MIN_KEEP_ALIVE_MS);
    expect(make({ keepAlive: '240000' }).keepAliveMs).toBe(240_000);
    expect(make({ keepAlive: String(MAX_TIMEOUT_MS) }).keepAliveMs).toBe(MAX_TIMEOUT_MS);
  });

  it('refuses a value under a second, suggesting it was meant as seconds', () => {
    expect(() => make({ keepAlive: '30' })).toThrow(UsageError);
    expect(() => make({ keepAlive: '30' })).toThrow('--keep-alive is in milliseconds and at least 1000 (one ping a second at most), got 30; 0 turns it off');
    try {
      make({ keepAlive: '30' });
    } catch (error) {
      expect((error as UsageError).fix).toBe('fenbs-mcp --keep-alive 30000');
    }
  });

  it('refuses what is not a whole number, and what no timer can hold', () => {
    expect(() => make({ keepAlive: '1.5s' })).toThrow('--keep-alive expects a whole number, got "1.5s"');
    expect(() => make({ keepAlive: '-1' })).toThrow('--keep-alive expects a whole number');
    expect(() => make({ keepAlive: String(MAX_TIMEOUT_MS + 1) })).toThrow(`--keep-alive is at most ${MAX_TIMEOUT_MS} ms`);
  });
});
