// RSS of a bridge after every STEP messages with 64 in flight, to tell a leak from a heap growing to its working size.
// Usage: [STEP=50000 TOTAL=300000] node bench/profile/growth.js <bridge bin>
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const script = process.argv[2];
const server = spawn(process.execPath, [fileURLToPath(new URL('../server.js', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
const { port } = JSON.parse(await new Promise((r) => createInterface({ input: server.stdout }).once('line', r)));
const bridge = spawn(process.execPath, [script, '--url', `http://127.0.0.1:${port}/json`, '--log-level', 'warn'], {
  env: { ...process.env, FENBS_TOKEN: 'bench-token' },
  stdio: ['pipe', 'pipe', 'inherit'],
});
const waiters = new Map();
createInterface({ input: bridge.stdout, crlfDelay: Infinity }).on('line', (line) => {
  const m = JSON.parse(line);
  waiters.get(m.id)?.(m);
  waiters.delete(m.id);
});
let nextId = 1;
const call = (method = 'tools/call', params = { name: 'bench', arguments: {} }) => {
  const id = nextId++;
  return new Promise((r) => {
    waiters.set(id, r);
    bridge.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
};
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${bridge.pid}/status`, 'utf8'))[1]) / 1024;
await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'd', version: '0' } });
bridge.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
const STEP = Number(process.env.STEP ?? 50000),
  TOTAL = Number(process.env.TOTAL ?? 300000);
const out = [];
for (let done = 0; done < TOTAL; done += STEP) {
  let sent = 0;
  const inflight = new Set();
  await new Promise((finish) => {
    const pump = () => {
      while (inflight.size < 64 && sent < STEP) {
        sent++;
        const p = call().then(() => {
          inflight.delete(p);
          if (sent < STEP) pump();
          else if (inflight.size === 0) finish();
        });
        inflight.add(p);
      }
    };
    pump();
  });
  out.push(`${(done + STEP) / 1000}k:${rss().toFixed(0)}`);
}
console.log(`RSS MiB after ${out.join(' ')}`);
bridge.stdin.end();
server.stdin.end();
