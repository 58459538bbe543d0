// An esbuild plugin: bundled packages load built-ins and modules at start-up that the bridge needs later or never; here they load on first use (and commander looks an option up without a call per option).
import { readFile } from 'node:fs/promises';
import assert from 'node:assert';
import http2 from 'node:http2';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// Each rewrite is exact: if a package changes the line, the build fails instead of silently
// bundling the eager load (or a broken one). A file may have several rewrites.
const H2_CONSTANTS = [
  'HTTP2_HEADER_AUTHORITY',
  'HTTP2_HEADER_METHOD',
  'HTTP2_HEADER_PATH',
  'HTTP2_HEADER_SCHEME',
  'HTTP2_HEADER_CONTENT_LENGTH',
  'HTTP2_HEADER_EXPECT',
  'HTTP2_HEADER_STATUS',
  'HTTP2_HEADER_PROTOCOL',
  'NGHTTP2_REFUSED_STREAM',
  'NGHTTP2_CANCEL',
];
const h2Constants = Object.fromEntries(H2_CONSTANTS.map((name) => [name, http2.constants[name]]));

// undici's request API (request, stream, pipeline, upgrade, connect): undici-parts.ts puts it on
// Dispatcher.prototype as undici's index does; the bridge itself sends with dispatch(), and the API
// is called only for a proxy tunnel (connect) and OAuth (request).
const UNDICI_API = ['request', 'stream', 'pipeline', 'upgrade', 'connect'];
const apiIndexFrom = UNDICI_API.map((name) => `module.exports.${name} = require('./api-${name}')`).join('\n');
const apiIndexTo = UNDICI_API.map((name) => `module.exports.${name} = function ${name} (...args) { return require('./api-${name}').apply(this, args) }`).join(
  '\n',
);

// undici's HTTP/1 client reads two tables of llhttp's constants module (error codes and parser
// types), but loading that module builds all 32 of its tables with loops over character ranges
// (~2 ms on Node 22, ~3 ms on Node 20, before the first request). The two tables are plain
// numbers, read here at build time from the pinned undici and written into the bundle as they are.
const LLHTTP_TABLES_USED = ['ERROR', 'TYPE'];
const requireHere = createRequire(import.meta.url);
const llhttpConstants = requireHere(join(dirname(requireHere.resolve('undici/package.json')), 'lib', 'llhttp', 'constants.js'));
const llhttpTables = Object.fromEntries(LLHTTP_TABLES_USED.map((name) => [name, llhttpConstants[name]]));

const REWRITES = [
  {
    // undici's HTTP/2 client (never used: allowH2 is off) loads node:http2, and with it tls, when
    // undici loads. Its constants are fixed numbers and names; connect() loads it.
    file: /undici[\\/]lib[\\/]dispatcher[\\/]client-h2\.js$/,
    from: "  http2 = require('node:http2')",
    to: `  http2 = { constants: ${JSON.stringify(h2Constants)}, connect: (...args) => require('node:http2').connect(...args) }`,
  },
  {
    // ...and the HTTP/2 client module itself: needed only when a server picks h2 over ALPN.
    file: /undici[\\/]lib[\\/]dispatcher[\\/]client\.js$/,
    from: "const connectH2 = require('./client-h2.js')",
    to: "const connectH2 = (...args) => require('./client-h2.js')(...args)",
  },
  {
    // The proxy agents (HTTP CONNECT and SOCKS5): made only when HTTP(S)_PROXY is set.
    file: /undici[\\/]lib[\\/]dispatcher[\\/]env-http-proxy-agent\.js$/,
    from: "const ProxyAgent = require('./proxy-agent')",
    to: "function ProxyAgent (...args) { return new (require('./proxy-agent'))(...args) }",
  },
  {
    // The request API, each method loaded on its first call (`this` is the dispatcher, as before).
    file: /undici[\\/]lib[\\/]api[\\/]index\.js$/,
    from: apiIndexFrom,
    to: apiIndexTo,
  },
  {
    // undici compiles its HTTP parser (llhttp, WebAssembly) with the synchronous WebAssembly.Module
    // when the first connection opens (~1 ms on Node 22, ~3 ms on 20: V8 compiles the functions
    // lazily, but decodes and checks the whole module). Started asynchronously when undici loads, the
    // compile runs on a V8 worker thread while the start goes on; the connection takes the result if
    // it is there, else compiles as before (as it also does when the asynchronous compile failed).
    // Node 22 and later only: on Node 20 the result was not there yet when the connection opened
    // (measured in cold starts), so the work would be done twice.
    file: /undici[\\/]lib[\\/]dispatcher[\\/]client-h1\.js$/,
    from: 'function lazyllhttp () {',
    to: `let precompiledLlhttp
if (Number(process.versions.node.split('.')[0]) >= 22 && process.env.UNDICI_NO_WASM_SIMD !== '1' && process.arch !== 'ppc64') {
  WebAssembly.compile(require('../llhttp/llhttp_simd-wasm.js')).then((mod) => { precompiledLlhttp = mod }, () => {})
}
function lazyllhttp () {`,
  },
  {
    file: /undici[\\/]lib[\\/]dispatcher[\\/]client-h1\.js$/,
    from: "mod = new WebAssembly.Module(require('../llhttp/llhttp_simd-wasm.js'))",
    to: "mod = precompiledLlhttp ?? new WebAssembly.Module(require('../llhttp/llhttp_simd-wasm.js'))",
  },
  {
    file: /undici[\\/]lib[\\/]dispatcher[\\/]client-h1\.js$/,
    from: "const constants = require('../llhttp/constants.js')",
    to: `const constants = ${JSON.stringify(llhttpTables)}`,
    // Any other table the client reads (a new undici) fails the build instead of reading undefined.
    check: (source) => [...source.matchAll(/\bconstants\.([A-Za-z_]+)/g)].every(([, name]) => LLHTTP_TABLES_USED.includes(name)),
  },
  {
    // commander loads child_process for executable subcommands, which the CLI does not have.
    file: /commander[\\/]lib[\\/]command\.js$/,
    from: "const childProcess = require('node:child_process');",
    to: "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };",
  },
  {
    // Not a load: commander checks each option it registers against every earlier one through a
    // call to option.is(), ~3,000 calls for the CLI's options, enough for V8 to optimize that small
    // function while the bridge starts. That one optimizing compile maps the optimizing compiler's
    // code into the process: RSS 0.5 s after start +1.4 MiB on Node 20, +5.6 MiB on Node 22. The same
    // search as a loop (Option.is compares exactly these two fields) leaves nothing hot at start.
    file: /commander[\\/]lib[\\/]command\.js$/,
    from: '    return this.options.find((option) => option.is(arg));',
    to: '    for (const option of this.options) if (option.short === arg || option.long === arg) return option;\n    return undefined;',
  },
  {
    // pino loads worker_threads to ask whether it runs on the main thread; the bridge always does.
    file: /pino[\\/]lib[\\/]tools\.js$/,
    from: "const { isMainThread } = require('worker_threads')",
    to: 'const isMainThread = true',
  },
  {
    // pino transports (a worker thread per transport) are not used by the bridge: its logger
    // writes through its own SonicBoom sinks (src/logging/logger.ts).
    file: /pino[\\/]lib[\\/]tools\.js$/,
    from: "const transport = require('./transport')",
    to: "const transport = (...args) => require('./transport')(...args)",
  },
  {
    file: /pino[\\/]pino\.js$/,
    from: "module.exports.transport = require('./lib/transport')",
    to: "Object.defineProperty(module.exports, 'transport', { get: () => require('./lib/transport'), enumerable: true, configurable: true })",
  },
  {
    // thread-stream (pino transports, which the bridge does not use) loads worker_threads at load
    // time; a Worker is only made when a transport starts.
    file: /thread-stream[\\/]index\.js$/,
    from: "const { Worker } = require('worker_threads')",
    to: "function Worker (...args) { return new (require('worker_threads').Worker)(...args) }",
  },
];

// The rewrites of each file, grouped so one onLoad applies them all.
const FILES = new Map();
for (const rewrite of REWRITES) {
  const key = rewrite.file.source;
  if (!FILES.has(key)) FILES.set(key, { file: rewrite.file, rewrites: [] });
  FILES.get(key).rewrites.push(rewrite);
}

// node:assert (~1.7 ms to load on Node 22: its error and diff code) is loaded at start-up by undici
// (most of its files) and sonic-boom, which only call it to check what must hold. Bundled packages get
// this stand-in instead: a call whose value holds returns, any other call and every property load
// node:assert and hand over to it. The property names are node:assert's own, read here at build time.
const ASSERT_NAMESPACE = 'lazy-assert';
const assertProperties = Object.keys(assert);
const lazyAssert = `'use strict'
function load () { return require('node:assert') }
function assert (value) { if (!value) load().apply(undefined, arguments) }
for (const name of ${JSON.stringify(assertProperties)}) {
  Object.defineProperty(assert, name, { get () { return load()[name] }, enumerable: true, configurable: true })
}
module.exports = assert
`;

export const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(build) {
    build.onResolve({ filter: /^(node:)?assert$/ }, ({ importer, namespace }) =>
      namespace === 'file' && /[\\/]node_modules[\\/]/.test(importer) ? { path: 'assert', namespace: ASSERT_NAMESPACE } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: ASSERT_NAMESPACE }, () => ({ contents: lazyAssert, loader: 'js' }));
    for (const { file, rewrites } of FILES.values()) {
      build.onLoad({ filter: file }, async ({ path }) => {
        let source = await readFile(path, 'utf8');
        for (const rewrite of rewrites) {
          if (!source.includes(rewrite.from)) throw new Error(`lazy-builtins: ${path} no longer contains ${JSON.stringify(rewrite.from)}`);
          source = source.replace(rewrite.from, rewrite.to);
          if (rewrite.check !== undefined && !rewrite.check(source))
            throw new Error(`lazy-builtins: ${path} no longer fits the rewrite to ${JSON.stringify(rewrite.to)}`);
        }
        return { contents: source, loader: 'js' };
      });
    }
  },
};
