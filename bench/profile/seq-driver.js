// Drives a bridge against bench/server.js: initialize, WARM calls, SEQ sequential, PAR with 64 in flight;
// prints CPU per message (from /proc) and time for each phase. MODE=sse for the event-stream route.
// Usage: [WARM=1000 SEQ=4000 PAR=20000 BRIDGE_CPU=1] node bench/profile/seq-driver.js <bridge bin> [node flags, e.g. --cpu-prof]
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const [script, ...flags] = process.argv.slice(2);
const server = spawn(process.execPath, [fileURLToPath(new URL('../server.js', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
const { port } = JSON.parse(await new Promise((r) => createInterface({ input: server.stdout }).once('line', r)));
// BRIDGE_CPU=N runs the bridge on core N alone (taskset execs node, so the pid read below is the bridge's);
// with the driver started under `taskset -c <another core>`, the figures of two builds compare run to run.
const bridgeArgs = [...flags, script, '--url', `http://127.0.0.1:${port}/${process.env.MODE ?? 'json'}`, '--log-level', 'warn'];
const pinned = process.env.BRIDGE_CPU;
const bridge = spawn(pinned === undefined ? process.execPath : 'taskset', pinned === undefined ? bridgeArgs : ['-c', pinned, process.execPath, ...bridgeArgs], {
  env: { ...process.env, FENBS_TOKEN: 'bench-token' },
  stdio: ['pipe', 'pipe', 'inherit'],
});
const waiters = new Map();
createInterface({ input: bridge.stdout, crlfDelay: Infinity }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id !== undefined) {
    waiters.get(m.id)?.(m);
    waiters.delete(m.id);
  }
});
let nextId = 1;
const call = (method = 'tools/call', params = { name: 'bench', arguments: {} }) => {
  const id = nextId++;
  return new Promise((r) => {
    waiters.set(id, r);
    bridge.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
};
const cpu = () => {
  const f = readFileSync(`/proc/${bridge.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10000;
};
await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'd', version: '0' } });
bridge.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
for (let i = 0; i < Number(process.env.WARM ?? 1000); i++) await call();
const seqN = Number(process.env.SEQ ?? 4000);
let c0 = cpu();
let t0 = performance.now();
for (let i = 0; i < seqN; i++) await call();
const seqMs = performance.now() - t0;
console.log(`sequential: ${((cpu() - c0) / seqN).toFixed(0)} µs CPU/msg, ${((seqMs * 1000) / seqN).toFixed(0)} µs/msg wall`);
const parN = Number(process.env.PAR ?? 20000);
c0 = cpu();
t0 = performance.now();
let sent = 0;
const inflight = new Set();
await new Promise((done) => {
  const pump = () => {
    while (inflight.size < 64 && sent < parN) {
      sent++;
      const p = call().then(() => {
        inflight.delete(p);
        if (sent < parN) pump();
        else if (inflight.size === 0) done();
      });
      inflight.add(p);
    }
  };
  pump();
});
const parMs = performance.now() - t0;
console.log(`64 in flight: ${((cpu() - c0) / parN).toFixed(0)} µs CPU/msg, ${((parN * 1000) / parMs).toFixed(0)} msg/s`);
bridge.stdin.end();
server.stdin.end();
await new Promise((r) => bridge.once('exit', r));
