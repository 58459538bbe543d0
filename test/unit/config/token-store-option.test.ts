// --token-store: where OAuth secrets are kept, the OS credential store when reachable unless the user names one.

import { describe, expect, it } from 'vitest';
import { createConfig, type RawOptions } from '../../../src/config/config.js';
import { UsageError } from '../../../src/core/errors.js';

const make = (options: RawOptions, env: Record<string, string> = {}) =>
  createConfig({
    options,
    env,
    readTextFile: () => {
      throw new Error('no files here');
    },
  });

describe('--token-store', () => {
  it('defaults to auto and takes auto, keychain and file, in any case', () => {
    expect(make({}).oauth.tokenStore).toBe('auto');
    expect(make({ tokenStore: 'Keychain' }).oauth.tokenStore).toBe('keychain');
    expect(make({ tokenStore: 'FILE' }).oauth.tokenStore).toBe('file');
  });

  it('reads FENBS_MCP_TOKEN_STORE when the option is not given, and the option wins over it', () => {
    expect(make({}, { FENBS_MCP_TOKEN_STORE: 'file' }).oauth.tokenStore).toBe('file');
    expect(make({ tokenStore: 'keychain' }, { FENBS_MCP_TOKEN_STORE: 'file' }).oauth.tokenStore).toBe('keychain');
  });

  it('refuses any other value, naming the three and where the value came from', () => {
    expect(() => make({ tokenStore: 'vault' })).toThrow(UsageError);
    expect(() => make({ tokenStore: 'vault' })).toThrow('--token-store must be auto, keychain or file, got "vault"');
    expect(() => make({}, { FENBS_MCP_TOKEN_STORE: 'disk' })).toThrow('FENBS_MCP_TOKEN_STORE must be auto, keychain or file, got "disk"');
  });
});
