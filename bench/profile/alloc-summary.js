// Bytes allocated per message from an alloc-marks.js profile: the total, then by function (self) or,
// with --tree, by call path down to DEPTH levels (paths under 300 B per message left out).
// Usage: node bench/profile/alloc-summary.js <profile.json> [--tree [DEPTH]]   (messages from <profile.json>.count)
import { readFileSync } from 'node:fs';

const [file, mode, depthArg] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const messages = Number(readFileSync(`${file}.count`, 'utf8'));
const nameOf = ({ callFrame: frame }) => `${frame.functionName || '(anon)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber}`;
const inclusive = (node) => node.selfSize + (node.children ?? []).reduce((total, child) => total + inclusive(child), 0);
const perMessage = (bytes) => `${(bytes / messages).toFixed(0).padStart(7)} B/msg`;

console.log(`${(inclusive(profile.head) / messages / 1024).toFixed(1)} KiB allocated per message (${messages} messages)`);
if (mode === '--tree') {
  const maxDepth = Number(depthArg ?? 6);
  const show = (node, depth) => {
    const bytes = inclusive(node);
    if (bytes / messages < 300) return;
    console.log(`${perMessage(bytes)}  ${'  '.repeat(depth)}${nameOf(node)}`);
    if (depth === maxDepth) return;
    for (const child of [...(node.children ?? [])].sort((a, b) => inclusive(b) - inclusive(a))) show(child, depth + 1);
  };
  show(profile.head, 0);
} else {
  const self = new Map();
  const walk = (node) => {
    self.set(nameOf(node), (self.get(nameOf(node)) ?? 0) + node.selfSize);
    for (const child of node.children ?? []) walk(child);
  };
  walk(profile.head);
  for (const [name, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${perMessage(bytes)}  ${name}`);
}
