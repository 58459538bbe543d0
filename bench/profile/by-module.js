// Self time per message of a .cpuprofile, by bundled module: functions in the bundle are grouped by the
// source file esbuild marks above them (an unminified build keeps those marks), others by Node module
// (node:…) or native function. Usage: node bench/profile/by-module.js <file.cpuprofile> <dist/cli.js> <messages>
import { readFileSync } from 'node:fs';

const [profileFile, bundleFile, messagesArg] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(profileFile, 'utf8'));
const messages = Number(messagesArg);
// esbuild writes `// <path>` above each bundled file: src/… for ours, …/node_modules/<package>/… for packages.
const starts = [];
readFileSync(bundleFile, 'utf8')
  .split('\n')
  .forEach((line, index) => {
    const marked = /^\/\/ (?:.*\/)?(src\/\S+|node_modules\/(?:@[^/]+\/)?[^/]+)/.exec(line);
    if (marked !== null) starts.push([index, marked[1].replace(/^node_modules\//, '')]);
  });
if (starts.length < 10) throw new Error(`${bundleFile} has no module marks: build it with FENBS_BUILD_UNMINIFIED=1`);
const moduleAt = (line) => {
  let found = '(bundle start)';
  for (const [start, name] of starts) {
    if (start > line) break;
    found = name;
  }
  return found;
};

const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
let busy = 0;
profile.samples.forEach((id, index) => {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  if (functionName === '(idle)') return;
  const micros = profile.timeDeltas[index] ?? 0;
  const group = url.endsWith(bundleFile.split('/').pop())
    ? moduleAt(lineNumber)
    : url.startsWith('node:')
      ? `node:${url.slice(5).split('/')[0]}`
      : url === ''
        ? functionName
        : url.split('/').slice(-2).join('/');
  self.set(group, (self.get(group) ?? 0) + micros);
  busy += micros;
});
console.log(`busy ${(busy / 1000).toFixed(0)} ms: ${(busy / messages).toFixed(1)} µs per message`);
for (const [group, micros] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`${(micros / messages).toFixed(1).padStart(7)} µs/msg ${((100 * micros) / busy).toFixed(1).padStart(5)} %  ${group}`);
}
