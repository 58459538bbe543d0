// --no-merge-pages: a list without a cursor is answered with every page merged unless the user turns it off.

import { describe, expect, it } from 'vitest';
import { createConfig, type RawOptions } from '../../../src/config/config.js';

const make = (options: RawOptions) =>
  createConfig({
    options,
    env: { FENBS_TOKEN: 'tok' },
    readTextFile: () => {
      throw new Error('no files here');
    },
  });

describe('--no-merge-pages', () => {
  it('merges by default, and not when commander hands over mergePages false', () => {
    expect(make({}).mergePages).toBe(true);
    expect(make({ mergePages: true }).mergePages).toBe(true);
    expect(make({ mergePages: false }).mergePages).toBe(false);
  });
});
