// The layer rule of src/: which folder may import which, and no import cycle. Run by `npm run lint`.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Each folder of src/ and what it may import besides itself, lowest first. The data path reads
// upwards: core is the vocabulary everyone shares; http knows one exchange; eras know what differs
// between protocol revisions; transports move messages over http below the pipeline, which owns
// each request's lifecycle (and assembles itself over an endpoint: pipeline/connect.ts);
// connection.ts makes the dispatcher, credential and endpoint every command reaches the server
// with. Only the entry points (bridge.ts, doctor/, shell/ through bridge.ts, cli/) import pipeline/.
// ARCHITECTURE.md explains each row; a change here is a change of the plan and belongs there too.
export const LAYERS = {
  core: [],
  demo: [],
  logging: ['core'],
  config: ['core', 'logging'],
  stdio: ['core', 'logging'],
  http: ['core', 'logging', 'config'],
  credentials: ['core', 'logging', 'config', 'http'],
  eras: ['core', 'logging', 'config', 'http'],
  transports: ['core', 'logging', 'config', 'http', 'eras'],
  pipeline: ['core', 'logging', 'config', 'http', 'eras', 'transports'],
  'connection.ts': ['core', 'logging', 'config', 'http', 'credentials'],
  'bridge.ts': ['core', 'logging', 'config', 'stdio', 'http', 'eras', 'pipeline', 'connection.ts'],
  doctor: ['core', 'logging', 'config', 'http', 'credentials', 'eras', 'transports', 'pipeline', 'connection.ts'],
  shell: ['core', 'logging', 'config', 'bridge.ts'],
  cli: ['core', 'logging', 'config', 'stdio', 'http', 'credentials', 'eras', 'connection.ts', 'bridge.ts', 'doctor', 'shell', 'demo'],
};

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The relative imports of one source text, as written. */
export function importsOf(text) {
  return [...text.matchAll(IMPORT)].map((match) => match[1]);
}

/** The layer a path inside src/ belongs to: its first folder, or the file's own name at the root. */
export function layerOf(pathInSrc) {
  return pathInSrc.split('/')[0];
}

/**
 * Checks a source tree given as { 'core/errors.ts': text, ... } (paths relative to src/). Returns
 * one sentence per problem: an import across a layer the table does not allow, an import of a
 * file that does not exist, a file in no known layer, and each import cycle.
 */
export function checkLayers(sources, layers = LAYERS) {
  const problems = [];
  const edges = new Map();
  for (const [path, text] of Object.entries(sources)) {
    const layer = layerOf(path);
    const allowed = layers[layer];
    if (allowed === undefined) {
      problems.push(`src/${path}: in no layer of the rule (a new folder needs its row in scripts/check-layers.js and ARCHITECTURE.md)`);
      continue;
    }
    const targets = [];
    for (const spec of importsOf(text)) {
      const target = relative('.', join(dirname(path), spec))
        .split('\\')
        .join('/')
        .replace(/\.js$/, '.ts');
      if (target.startsWith('..')) {
        problems.push(`src/${path}: imports ${spec}, outside src/`);
        continue;
      }
      if (!(target in sources)) {
        problems.push(`src/${path}: imports ${spec}, which is not a file of src/`);
        continue;
      }
      targets.push(target);
      const targetLayer = layerOf(target);
      if (targetLayer !== layer && !allowed.includes(targetLayer)) {
        problems.push(
          `src/${path}: ${layer} may not import ${targetLayer} (src/${target}); it may import ${allowed.length === 0 ? 'nothing outside itself' : allowed.join(', ')}`,
        );
      }
    }
    edges.set(path, targets);
  }
  for (const cycle of cyclesOf(edges)) problems.push(`import cycle among ${cycle.map((path) => `src/${path}`).join(', ')}`);
  return problems;
}

/** The files of each import cycle, sorted: every strongly connected component of more than one file, or a file that imports itself (Tarjan). */
function cyclesOf(edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of edges.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node), low.get(target)));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node), index.get(target)));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfImport = component.length === 1 && (edges.get(node) ?? []).includes(node);
    if (component.length > 1 || selfImport) cycles.push(component.sort());
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node);
  return cycles;
}

/** Reads every .ts file under a folder into { relativePath: text }. */
export function readSources(root) {
  const sources = {};
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) sources[relative(root, path).split('\\').join('/')] = readFileSync(path, 'utf8');
    }
  };
  walk(root);
  return sources;
}

// Run as a script: check src/ and exit 1 with the problems listed.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkLayers(readSources(fileURLToPath(new URL('../src', import.meta.url))));
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`layer rule: ${problems.length} problem${problems.length === 1 ? '' : 's'} (the rule is in scripts/check-layers.js)`);
    process.exitCode = 1;
  }
}
