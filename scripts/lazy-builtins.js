// An esbuild plugin: three bundled packages load a Node built-in at start-up that the bridge never uses there; here they load it on first use.
import { readFile } from 'node:fs/promises';
import http2 from 'node:http2';

// Each rewrite is exact: if a package changes the line, the build fails instead of silently
// bundling the eager load (or a broken one).
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

const REWRITES = [
  {
    // undici's HTTP/2 client (never used: allowH2 is off) loads node:http2, and with it tls, when
    // undici loads. Its constants are fixed numbers and names; connect() loads it.
    file: /undici[\\/]lib[\\/]dispatcher[\\/]client-h2\.js$/,
    from: "  http2 = require('node:http2')",
    to: `  http2 = { constants: ${JSON.stringify(h2Constants)}, connect: (...args) => require('node:http2').connect(...args) }`,
  },
  {
    // commander loads child_process for executable subcommands, which the CLI does not have.
    file: /commander[\\/]lib[\\/]command\.js$/,
    from: "const childProcess = require('node:child_process');",
    to: "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };",
  },
  {
    // pino loads worker_threads to ask whether it runs on the main thread; the bridge always does.
    file: /pino[\\/]lib[\\/]tools\.js$/,
    from: "const { isMainThread } = require('worker_threads')",
    to: 'const isMainThread = true',
  },
  {
    // thread-stream (pino transports, which the bridge does not use) loads worker_threads at load
    // time; a Worker is only made when a transport starts.
    file: /thread-stream[\\/]index\.js$/,
    from: "const { Worker } = require('worker_threads')",
    to: "function Worker (...args) { return new (require('worker_threads').Worker)(...args) }",
  },
];

export const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(build) {
    for (const rewrite of REWRITES) {
      build.onLoad({ filter: rewrite.file }, async ({ path }) => {
        const source = await readFile(path, 'utf8');
        if (!source.includes(rewrite.from)) throw new Error(`lazy-builtins: ${path} no longer contains ${JSON.stringify(rewrite.from)}`);
        return { contents: source.replace(rewrite.from, rewrite.to), loader: 'js' };
      });
    }
  },
};
