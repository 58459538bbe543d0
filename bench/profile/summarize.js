// Self time by function from a .cpuprofile, as a share of busy (non-idle) time.
// Usage: node bench/profile/summarize.js <file.cpuprofile> [top N]
import { readFileSync } from 'node:fs';
const prof = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 40);
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = prof.timeDeltas;
let total = 0;
let idle = 0;
for (let i = 0; i < prof.samples.length; i++) {
  const n = byId.get(prof.samples[i]);
  const d = dt[i] ?? 0;
  const cf = n.callFrame;
  const key = `${cf.functionName || '(anon)'} ${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber}`;
  if (cf.functionName === '(idle)') {
    idle += d;
    continue;
  }
  total += d;
  self.set(key, (self.get(key) ?? 0) + d);
}
console.log(`busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms`);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
