#!/usr/bin/env node
// Checks the Node version in syntax any Node parses, then starts the CLI from a V8 code cache when there is one.
'use strict';

var required = [20, 18, 1];
var found = process.versions.node.split('.').map(Number);
var tooOld = found[0] < required[0] || (found[0] === required[0] && (found[1] < required[1] || (found[1] === required[1] && found[2] < required[2])));
if (tooOld) {
  process.stderr.write(
    'fenbs-mcp needs Node.js ' +
      required.join('.') +
      ' or newer, but it was started with Node.js ' +
      process.versions.node +
      ' (' +
      process.execPath +
      '); install a current Node.js LTS or point your client at it.\n',
  );
  process.exit(1);
}

// Why a code cache of our own: most of a start is V8 parsing and compiling the bundle (bundled
// undici, pino and commander), and Node keeps no cache of that on Node 20; Node 22's compile cache
// keeps only a module's top level, not the bundled packages' bodies, which compile when first run.
// A cache V8 makes after a run holds every function that run compiled, so the next start skips that
// work. It lives next to the bundle (dist/cli-<build>-<node>-<arch>.v8cache): whoever can write there
// can change the bundle itself, so it trusts nothing new, and a read-only install starts without one.
// V8 refuses a cache made by another V8 version or flags (the start then compiles as before).
/** A cache that V8 accepted is written again only when this run's is this much larger (it compiled more). */
var CACHE_GROWTH_TO_REWRITE = 1.05;
// The bundle is CommonJS-format code run as a function of these, as Node runs a CommonJS file; its
// sources are ES modules, so it runs in strict mode as they did.
var WRAPPER_HEAD = "(function (exports, require, module, __filename, __dirname) {'use strict';";
var WRAPPER_TAIL = '\n})';
/** Enough of the bundle's start to hold its first line (the build's hash). */
var FIRST_LINE_BYTES = 128;

// Why V8 compiles WebAssembly with its baseline compiler (Liftoff) only: the one WebAssembly module in
// the process is undici's HTTP parser (llhttp), and V8's optimizing tier recompiles it in the
// background right after the first reply; that compile leaves ~10 MiB of freed compiler memory in the
// process for good (RSS 55 -> 65 MiB, 91 MiB while it runs) to parse a reply's head in ~1 us instead
// of ~2 us. Set before the cache is read: a code cache holds the flags it was made with. Liftoff
// covers all of WebAssembly (SIMD included) on these two; elsewhere V8 keeps its own choice.
// Once a V8 flag has changed, Node compiles each built-in module it loads from then on without its
// embedded code cache (~20 ms more CPU before the first answer), so the built-ins the bundle loads
// before its first answer (process.moduleLoadList) are loaded first; a name missing here costs time only.
var STARTUP_BUILTINS = ['node:module', 'node:vm', 'node:net', 'node:http', 'node:diagnostics_channel', 'node:timers/promises', 'node:os', 'node:perf_hooks'];
if (process.arch === 'x64' || process.arch === 'arm64') {
  STARTUP_BUILTINS.forEach(function (name) {
    process.getBuiltinModule(name);
  });
  process.getBuiltinModule('node:v8').setFlagsFromString('--liftoff-only');
}

// This file is CommonJS (bin/package.json says so): Node starts a CommonJS entry without setting up
// its ES module loader, which an ES module entry pays for on every start (~6 ms and ~0.7 MiB on Node 22).
// process.getBuiltinModule (Node 20.16+, so every Node that passed the check) hands over built-ins.
var nodeModule = process.getBuiltinModule('node:module');
var fs = process.getBuiltinModule('node:fs');
var vm = process.getBuiltinModule('node:vm');
var path = process.getBuiltinModule('node:path');
// __dirname is this file's real path (npx starts it through a symlink in node_modules/.bin).
var file = path.join(__dirname, '..', 'dist', 'cli.js');
var bytes;
try {
  bytes = fs.readFileSync(file);
} catch (error) {
  // A clone before its first build (or a dist/ deleted since): one sentence, not Node's stack trace.
  // Exit 1, the code of a failure that is no usage mistake; nothing was started.
  if (error.code !== 'ENOENT') throw error;
  process.stderr.write('fenbs-mcp: ' + file + ' is missing: run npm run build (or npm ci) in ' + path.join(__dirname, '..') + '\n');
  process.exit(1);
}
// scripts/build.js puts the bundle's content hash on its first line.
var build = /^\/\/ fenbs-mcp bundle ([0-9a-f]+)\n/.exec(bytes.toString('latin1', 0, FIRST_LINE_BYTES));
var cacheFile = build === null ? undefined : path.join(path.dirname(file), 'cli-' + build[1] + '-' + process.version + '-' + process.arch + '.v8cache');
var cached;
if (cacheFile !== undefined) {
  try {
    cached = fs.readFileSync(cacheFile);
  } catch {
    // No cache yet: this run makes one.
  }
}
// The wrapped source is decoded from bytes in one piece: the file's text joined to the wrapper as
// strings would leave a second copy (0.65 MiB) in V8's large-object space until a full collection.
// The bundle is ASCII (scripts/build.js escapes anything else), so Latin-1 reads the same text
// as UTF-8 would, without the UTF-8 decoder's pass over 650 kB.
var script = new vm.Script(Buffer.concat([Buffer.from(WRAPPER_HEAD), bytes, Buffer.from(WRAPPER_TAIL)]).toString('latin1'), {
  filename: file,
  cachedData: cached,
});
// The size V8 accepted, 0 when it had none or refused it; neither the cache's bytes nor the file's are
// kept (the script holds its source).
var acceptedBytes = cached === undefined || script.cachedDataRejected === true ? 0 : cached.length;
cached = undefined;
bytes = undefined;
if (cacheFile !== undefined) {
  process.once('exit', function () {
    saveCache(script, cacheFile, acceptedBytes);
  });
}
var cli = { exports: {} };
script.runInThisContext().call(cli.exports, cli.exports, nodeModule.createRequire(file), cli, file, path.dirname(file));
cli.exports.run();

// Writes the cache V8 makes now (with what this run compiled), unless the one it started from was as good.
function saveCache(script, cacheFile, acceptedBytes) {
  var temporary = cacheFile + '.' + process.pid + '.tmp';
  try {
    var data = script.createCachedData();
    if (acceptedBytes > 0 && data.length <= acceptedBytes * CACHE_GROWTH_TO_REWRITE) return;
    // Written aside, then renamed: a start running alongside reads the old file or the new, never half.
    fs.writeFileSync(temporary, data);
    fs.renameSync(temporary, cacheFile);
  } catch {
    // A read-only install (or a full disk): the next start compiles as before.
    try {
      fs.rmSync(temporary, { force: true });
    } catch {
      // Nothing was written.
    }
  }
}
