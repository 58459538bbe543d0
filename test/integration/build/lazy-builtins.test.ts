// The build's rewrites of bundled packages (scripts/lazy-builtins.js) hand over what the originals did.

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { build, type Plugin } from 'esbuild';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const UNDICI_DIR = dirname(require.resolve('undici/package.json'));
const PLUGIN_URL = new URL('../../../scripts/lazy-builtins.js', import.meta.url).href;

/** undici's HTTP/1 client bundled alone with the plugin, as scripts/build.js bundles it. */
async function bundleClientH1(): Promise<string> {
  const { lazyBuiltins } = (await import(PLUGIN_URL)) as { lazyBuiltins: Plugin };
  const result = await build({
    entryPoints: [join(UNDICI_DIR, 'lib', 'dispatcher', 'client-h1.js')],
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'node',
    logLevel: 'silent',
    plugins: [lazyBuiltins],
  });
  return result.outputFiles[0]!.text;
}

/** The value of the object literal that `declaration` (a regular expression) is followed by in `code` (balanced braces; the literal holds no braces in strings). */
function objectLiteralAfter(code: string, declaration: RegExp): unknown {
  const found = declaration.exec(code);
  if (found === null) throw new Error(`no ${String(declaration)} in the bundle`);
  const start = found.index + found[0].length;
  let depth = 0;
  let end = start;
  do {
    if (code[end] === '{') depth++;
    else if (code[end] === '}') depth--;
    end++;
  } while (depth > 0 && end < code.length);
  return runInNewContext(`(${code.slice(start, end)})`) as unknown;
}

describe('the lazy-builtins build plugin', () => {
  it("gives undici's HTTP/1 client llhttp's error and parser-type tables as written at build time, without llhttp's constants module", async () => {
    const code = await bundleClientH1();
    const constants = require(join(UNDICI_DIR, 'lib', 'llhttp', 'constants.js')) as Record<string, unknown>;
    expect(code).not.toContain('llhttp/constants.js');
    expect(objectLiteralAfter(code, /\b(?:var|let|const) constants\d* = /)).toEqual({ ERROR: constants.ERROR, TYPE: constants.TYPE });
  });
});
