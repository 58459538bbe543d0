// Reads `perf script` output of a bridge recorded with kernel and native frames (`perf record -g`,
// the bridge started with --perf-basic-prof so JIT frames have names) and says where its CPU goes per
// message, native work included: V8's runtime, JSON.parse, inline-cache misses, hidden-class
// creation are counted against the nearest JavaScript frame that called them, which --cpu-prof does
// not do. See README.md for the recording.
//
// Usage: perf script -i FILE | node bench/profile/perf-frames.js --messages N [--period-us 50] [--top 40]
//        perf script -i FILE | node bench/profile/perf-frames.js --messages N --leaf REGEX [--depth 3]
// Without --leaf: user-space µs per message by nearest JavaScript frame, and the kernel's share.
// With --leaf: only samples whose innermost symbol matches REGEX, by their first DEPTH JavaScript
// frames (e.g. --leaf 'Map::CopyWithField|DefineNamedOwnIC_Slow' finds hidden classes made per message).
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    messages: { type: 'string' },
    'period-us': { type: 'string', default: '50' },
    top: { type: 'string', default: '40' },
    leaf: { type: 'string' },
    depth: { type: 'string', default: '3' },
  },
});
if (values.messages === undefined) {
  process.stderr.write('usage: perf script -i FILE | node bench/profile/perf-frames.js --messages N [--leaf REGEX]\n');
  process.exit(2);
}
const usPerSamplePerMessage = Number(values['period-us']) / Number(values.messages);
const leaf = values.leaf === undefined ? undefined : new RegExp(values.leaf);
const depth = Number(values.depth);

const counts = new Map();
const count = (key) => counts.set(key, (counts.get(key) ?? 0) + 1);
let kernel = 0;
let user = 0;
// One sample: its frames, innermost first, as [symbol, object file].
let frames = [];
// A frame line: address, symbol (with +offset), object file in parentheses.
const FRAME = /^\s+[0-9a-f]+\s+(.*)\s+\((.*)\)$/;
const isJs = (symbol) => symbol.startsWith('JS:');
const name = (symbol) => symbol.replace(/\+0x[0-9a-f]+$/, '');

function take() {
  if (frames.length === 0) return;
  const [innermost, object] = frames[0];
  if (object.includes('kernel')) {
    kernel++;
    return;
  }
  user++;
  if (leaf !== undefined) {
    if (!leaf.test(innermost)) return;
    count(
      frames
        .filter(([symbol]) => isJs(symbol))
        .slice(0, depth)
        .map(([symbol]) => name(symbol))
        .join(' < ') || '(no JavaScript frame)',
    );
    return;
  }
  const js = frames.find(([symbol]) => isJs(symbol));
  count(js === undefined ? `(no JavaScript frame) ${name(innermost)}` : name(js[0]));
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === '') {
    take();
    frames = [];
    continue;
  }
  const frame = FRAME.exec(line);
  if (frame !== null) frames.push([frame[1], frame[2]]);
}
take();

const perMessage = (samples) => (samples * usPerSamplePerMessage).toFixed(2).padStart(7);
console.log(`user space ${perMessage(user)} µs/msg, kernel ${perMessage(kernel)} µs/msg`);
const rows = [...counts].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
for (const [key, samples] of rows) console.log(`${perMessage(samples)}  ${key}`);
