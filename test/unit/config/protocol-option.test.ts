// --protocol: translation between eras is on unless the user turns it off.

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

describe('--protocol', () => {
  it('defaults to auto and takes passthrough, in any case', () => {
    expect(make({}).protocol).toBe('auto');
    expect(make({ protocol: 'PassThrough' }).protocol).toBe('passthrough');
  });

  it('refuses any other mode', () => {
    expect(() => make({ protocol: 'translate' })).toThrow(UsageError);
    expect(() => make({ protocol: 'translate' })).toThrow('--protocol must be auto or passthrough, got "translate"');
  });
});
