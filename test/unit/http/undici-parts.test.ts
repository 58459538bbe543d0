// undici's internal layout that src/http/undici-parts.ts relies on: fails with a message saying what moved.

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent, EnvHttpProxyAgent } from '../../../src/http/undici-parts.js';

const require = createRequire(import.meta.url);
/** The installed undici package directory (its package.json is exported, its lib/ is not). */
const UNDICI_DIR = dirname(require.resolve('undici/package.json'));
const DEEP_PATHS = ['lib/dispatcher/dispatcher.js', 'lib/api/index.js', 'lib/dispatcher/env-http-proxy-agent.js', 'lib/dispatcher/agent.js'];
/** The Dispatcher methods the bridge calls; undici's index puts them on the prototype, undici-parts.ts does it here. */
const API_METHODS = ['request', 'stream', 'pipeline', 'upgrade', 'connect'];

const UPGRADE = 'undici upgrade: re-check src/http/undici-parts.ts (see the note there) before changing the pinned version';

describe("undici's layout the bridge imports from", () => {
  it('is the exact undici version package.json pins', () => {
    const pinned = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> })
      .devDependencies.undici;
    const installed = (JSON.parse(readFileSync(join(UNDICI_DIR, 'package.json'), 'utf8')) as { version: string }).version;
    expect(pinned, 'undici must be pinned to an exact version (no ^ or ~): undici-parts.ts imports its internals').toMatch(/^\d+\.\d+\.\d+$/);
    expect(installed, `node_modules holds undici ${installed} but package.json pins ${pinned}: run npm ci. ${UPGRADE}`).toBe(pinned);
  });

  it.each(DEEP_PATHS)('still has %s', (path) => {
    expect(existsSync(join(UNDICI_DIR, path)), `undici no longer has ${path}. ${UPGRADE}`).toBe(true);
  });

  it('gives Dispatcher.prototype request, stream, pipeline, upgrade and connect once undici-parts.ts is loaded', async () => {
    const { default: Dispatcher } = await import('undici/lib/dispatcher/dispatcher.js');
    for (const method of API_METHODS) {
      expect(
        typeof (Dispatcher.prototype as unknown as Record<string, unknown>)[method],
        `Dispatcher.prototype.${method} is missing after importing undici-parts.ts: undici's lib/api/index.js changed. ${UPGRADE}`,
      ).toBe('function');
    }
  });

  it.each([
    ['EnvHttpProxyAgent', 'env-http-proxy-agent.js', () => new EnvHttpProxyAgent({ httpProxy: '', httpsProxy: '', noProxy: '' })],
    ['Agent', 'agent.js', () => new Agent({})],
  ] as const)('exports %s as a constructor of a dispatcher with those methods', async (name, file, create) => {
    expect(typeof (name === 'Agent' ? Agent : EnvHttpProxyAgent), `undici's lib/dispatcher/${file} no longer exports a class. ${UPGRADE}`).toBe('function');
    const agent = create();
    try {
      for (const method of ['request', 'connect', 'dispatch'])
        expect(typeof (agent as unknown as Record<string, unknown>)[method], `an ${name} has no ${method}(). ${UPGRADE}`).toBe('function');
    } finally {
      await agent.close();
    }
  });
});
