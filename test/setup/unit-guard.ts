// The unit tier's promise, kept by the machine: a unit test that starts a process or opens a socket fails.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import type * as ChildProcess from 'node:child_process';
import type * as Dgram from 'node:dgram';
import type * as Net from 'node:net';
import type * as Tls from 'node:tls';
import type * as WorkerThreads from 'node:worker_threads';

const requireBuiltin = createRequire(import.meta.url);

function refuse(what: string): never {
  throw new Error(`a unit test must not ${what}: move this test to the integration tier`);
}

// Patched on the CommonJS export objects, then copied to the ES module namespaces
// (syncBuiltinESMExports), so `import { spawn } from 'node:child_process'` sees the patch too.
const childProcess = requireBuiltin('node:child_process') as typeof ChildProcess;
for (const name of ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync'] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`start a process (child_process.${name})`), writable: true, configurable: true });
}
const net = requireBuiltin('node:net') as typeof Net;
net.Server.prototype.listen = function listen(): never {
  refuse('open a server socket (listen)');
};
net.Socket.prototype.connect = function connect(): never {
  refuse('connect a socket');
};
const tls = requireBuiltin('node:tls') as typeof Tls;
Object.defineProperty(tls, 'connect', { value: () => refuse('open a TLS connection'), writable: true, configurable: true });
const dgram = requireBuiltin('node:dgram') as typeof Dgram;
Object.defineProperty(dgram, 'createSocket', { value: () => refuse('open a UDP socket'), writable: true, configurable: true });
const workerThreads = requireBuiltin('node:worker_threads') as typeof WorkerThreads;
Object.defineProperty(workerThreads, 'Worker', {
  value: class {
    constructor() {
      refuse('start a worker thread');
    }
  },
  writable: true,
  configurable: true,
});
syncBuiltinESMExports();
