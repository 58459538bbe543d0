// The unit tier's promise, kept by the machine: a unit test that starts a process or opens a socket fails, naming what it did.
import dgram from 'node:dgram';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';
import workerThreads from 'node:worker_threads';
import { afterEach } from 'vitest';

// The first refusal is kept: code that catches the throw (a spawn expected to fail, a retry) must not
// turn an integration test into a passing unit test.
let refused: Error | undefined;
function refuse(what: string): never {
  const error = new Error(`a unit test must not ${what}: move this test to the integration tier`);
  refused ??= error;
  throw error;
}
afterEach(() => {
  const error = refused;
  refused = undefined;
  if (error !== undefined) throw error;
});

// The prototypes cover every way in: http(s) servers extend net.Server, and net.connect, http
// requests and undici all end in Socket.prototype.connect.
net.Server.prototype.listen = function listen() {
  return refuse('listen on a socket');
};
net.Socket.prototype.connect = function connect() {
  return refuse('connect a socket');
};

// Builtin ESM named imports (`import { spawn } from 'node:child_process'`) are copies of the CommonJS
// exports; patching those and calling syncBuiltinESMExports updates both, for modules loaded before or after.
const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
for (const name of ['spawn', 'fork', 'exec', 'execFile', 'spawnSync', 'execSync', 'execFileSync']) {
  childProcess[name] = () => refuse(`start a process (child_process.${name})`);
}
tls.connect = () => refuse('open a TLS connection');
dgram.createSocket = () => refuse('create a UDP socket');
workerThreads.Worker = class {
  constructor() {
    refuse('start a worker thread');
  }
} as unknown as typeof workerThreads.Worker;
syncBuiltinESMExports();
