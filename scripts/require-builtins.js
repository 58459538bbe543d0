// An esbuild plugin: the bundle's `import … from 'node:x'` statements become require('node:x'), so Node builds no ES module facade of the built-in.
import { builtinModules } from 'node:module';

// Why: to link `import { readFileSync } from 'node:fs'`, Node makes an ES module facade of the
// built-in and copies every export into it at once, which runs each lazy getter the built-in has:
// node:fs loads fs/promises (and readline with it), node:crypto loads WebCrypto, and on Node 22
// node:http loads Node's own copy of undici for its WebSocket export. require() hands over the
// built-in's exports object as it is, so those getters run only if the bridge reads them. esbuild's
// interop reads a named import off that object when the code uses it, as ES module linking would.
const BUILTINS = new Set(builtinModules.flatMap((name) => (name.startsWith('node:') ? [name] : [name, `node:${name}`])));
const NAMESPACE = 'require-builtin';

export const requireBuiltins = {
  name: 'require-builtins',
  setup(build) {
    build.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
      if (args.kind !== 'import-statement' || !BUILTINS.has(args.path)) return undefined;
      return { path: args.path, namespace: NAMESPACE };
    });
    build.onLoad({ filter: /.*/, namespace: NAMESPACE }, ({ path }) => ({
      contents: `module.exports = require(${JSON.stringify(path)});`,
      loader: 'js',
    }));
  },
};
