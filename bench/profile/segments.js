// Where a sequential round trip's time goes, segment by segment: the driver's monotonic clock and the
// bridge's (segment-marks.js) are the same clock, so each call's time splits into client → stdin,
// stdin → request created, created → headers sent, → response headers, → response end, → stdout, → client.
// Usage: [CALLS=3000 MODE=json] node bench/profile/segments.js <bridge bin>   (prints medians in µs)
import { spawn } from 'node:child_process';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const [bin] = process.argv.slice(2);
const calls = Number(process.env.CALLS ?? 3000);
const marksFile = join(mkdtempSync(join(tmpdir(), 'fenbs-segments-')), 'marks.json');
const now = () => Number(process.hrtime.bigint());
const server = spawn(process.execPath, [fileURLToPath(new URL('../server.js', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
const { port } = JSON.parse(await new Promise((resolve) => createInterface({ input: server.stdout }).once('line', resolve)));
const preload = fileURLToPath(new URL('./segment-marks.js', import.meta.url));
const bridge = spawn(process.execPath, ['--import', preload, bin, '--url', `http://127.0.0.1:${port}/${process.env.MODE ?? 'json'}`, '--log-level', 'warn'], {
  env: { ...process.env, FENBS_TOKEN: 'bench-token', MARKS_OUT: marksFile },
  stdio: ['pipe', 'pipe', 'inherit'],
});
let waiter;
createInterface({ input: bridge.stdout, crlfDelay: Infinity }).on('line', (line) => {
  const at = now();
  if (JSON.parse(line).id !== undefined && waiter !== undefined) {
    const resolve = waiter;
    waiter = undefined;
    resolve(at);
  }
});
const call = (id, method = 'tools/call', params = { name: 'bench', arguments: {} }) =>
  new Promise((resolve) => {
    waiter = resolve;
    bridge.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  });
await call(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'segments', version: '0' } });
bridge.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
for (let id = 1; id <= 1000; id++) await call(id);
const sent = [];
const received = [];
for (let i = 0; i < calls; i++) {
  sent.push(now());
  received.push(await call(2000 + i));
}
bridge.stdin.end();
await new Promise((resolve) => bridge.on('exit', resolve));
server.stdin.end();

const marks = JSON.parse(readFileSync(marksFile, 'utf8'));
// The first mark of a kind at or after `t` (marks are in time order).
const firstAfter = (list, t) => {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (list[middle] < t) low = middle + 1;
    else high = middle;
  }
  return list[low];
};
const names = ['client → stdin', 'stdin → created', 'created → sent', 'sent → headers', 'headers → end', 'end → stdout', 'stdout → client', 'total'];
const samples = names.map(() => []);
for (let i = 0; i < sent.length; i++) {
  const points = [sent[i]];
  for (const kind of ['stdin', 'create', 'send', 'headers', 'trailers', 'out']) points.push(firstAfter(marks[kind], points.at(-1)));
  points.push(received[i]);
  if (points.some((point) => point === undefined || point > received[i])) continue;
  for (let k = 0; k < points.length - 1; k++) samples[k].push(points[k + 1] - points[k]);
  samples.at(-1).push(received[i] - sent[i]);
}
const median = (values) => values.slice().sort((a, b) => a - b)[values.length >> 1] / 1000;
console.log(`${names.map((name, k) => `${name} ${median(samples[k]).toFixed(1)}`).join(' | ')} µs (median of ${samples[0].length})`);
