// `npm run bench`: fenbs-mcp against the limit for any stdio-to-HTTP bridge, in one interleaved run.
//
// Usage: node bench/run.js [--quick] [--json] [--bridge <path to a bridge's bin script>]
// Prints a table of absolute figures with each one's ratio to the limit (undici in-process plus an
// echo child, measured in the same run). Exits 1 only if some figure could not be measured; a missed
// target is reported, not fatal. Progress goes to stderr; the report goes to stdout.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeFigures, formatReport, resolveFigure } from './figures.js';
import { BenchRun } from './measure.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER_PATH = fileURLToPath(new URL('./server.js', import.meta.url));
const SERVER_START_TIMEOUT_MS = 10_000;

// Counts for a full run (about two to three minutes on two cores) and for a smoke test.
const FULL_CONFIG = {
  warmUp: 1000,
  rounds: 5,
  sequentialPerRound: 1000,
  throughput: { 1: 2000, 16: 8000, 64: 10_000 },
  pipelined: 10_000,
  coldStarts: 10,
  largeRounds: { 1: 5, 10: 5, 50: 3 },
  growthFrom: 10_000,
  growthTo: 100_000,
  timeoutMs: 60_000,
  growthTimeoutMs: 240_000,
};

const QUICK_CONFIG = {
  warmUp: 200,
  rounds: 2,
  sequentialPerRound: 200,
  throughput: { 1: 300, 16: 1000, 64: 2000 },
  pipelined: 10_000,
  coldStarts: 3,
  largeRounds: { 1: 1, 10: 1, 50: 1 },
  growthFrom: 2000,
  growthTo: 20_000,
  timeoutMs: 30_000,
  growthTimeoutMs: 60_000,
};

function log(message) {
  process.stderr.write(`[bench] ${message}\n`);
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

async function main() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      bridge: { type: 'string', default: resolve(REPO_ROOT, 'bin/fenbs-mcp.js') },
    },
  });
  const config = values.quick ? QUICK_CONFIG : FULL_CONFIG;
  const bridgePath = resolve(values.bridge);
  const environment = describeEnvironment({ quick: values.quick, bridgePath });
  if (!values.json) log(`node ${environment.node}, ${environment.cores} cores, loadavg ${environment.loadavgBefore.join(' ')}`);
  const startedAt = performance.now();

  const server = await startServer();
  const run = new BenchRun({ config, bridgePath, origin: server.origin, log });
  try {
    log(`cold start (${config.coldStarts} each)`);
    await run.measureColdStart();
    await run.measureJsonMode();
    await run.measureSseMode();
    await run.measureLargeReplies();
    await run.measureGrowth();
  } finally {
    await server.stop();
  }

  environment.loadavgAfter = loadavg();
  environment.durationMs = performance.now() - startedAt;
  const figures = describeFigures(config).map((spec) => resolveFigure(spec, run.measured[spec.key]));
  const notes = [...run.notes];
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ environment, config, figures, notes }, null, 2)}\n`);
  } else {
    process.stdout.write(formatReport({ environment, figures, notes }));
  }
  if (figures.some((figure) => figure.missing.length > 0)) process.exitCode = 1;
}

main().catch((error) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
