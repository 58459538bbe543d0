// Takes the figures, interleaving subjects round by round so that machine drift falls on all alike.
//
// Every subject is a child process, and the memory and CPU time of each come from /proc alike, so
// the bench runs on Linux only.
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { BridgeSubject, EchoSubject, ReplyWriterSubject, UndiciChildSubject, checkLargeLine, toBlobJson } from './subjects.js';

const BYTES_PER_MIB = 1024 * 1024;
const START_TIMEOUT_MS = 15_000;
// How long after the first answer the cold-start figures read RSS a second time.
const SETTLED_RSS_DELAY_MS = 500;
const WARM_UP_IN_FLIGHT = 16;
const GROWTH_IN_FLIGHT = 64;

const BYTES_PER_KB = 1024;
const DEFAULT_CLOCK_TICKS_PER_S = 100;

// utime and stime are fields 14 and 15 of /proc/<pid>/stat; counted from the field after `comm`.
const UTIME_INDEX = 11;
const STIME_INDEX = 12;

function readClockTicksPerSecond() {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(ticks) && ticks > 0 ? ticks : DEFAULT_CLOCK_TICKS_PER_S;
  } catch {
    return DEFAULT_CLOCK_TICKS_PER_S;
  }
}

const CLOCK_TICKS_PER_S = readClockTicksPerSecond();

// Resident set size now (VmRSS) and its high-water mark (VmHWM), in bytes.
// Deletes the V8 code caches bin/fenbs-mcp.js keeps next to its bundle (dist/cli-*.v8cache), so
// that the next start is a first start; false when the bridge at `bridgePath` has none to delete.
function removeCodeCaches(bridgePath) {
  const dist = join(dirname(dirname(bridgePath)), 'dist');
  if (!existsSync(dist)) return false;
  const caches = readdirSync(dist).filter((name) => name.endsWith('.v8cache'));
  for (const name of caches) rmSync(join(dist, name), { force: true });
  return caches.length > 0 || basename(bridgePath) === 'fenbs-mcp.js';
}

function readMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (match === null) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(match[1]) * BYTES_PER_KB;
  };
  return { rssBytes: field('VmRSS'), peakRssBytes: field('VmHWM') };
}

// Resets the process's peak RSS (VmHWM) to its RSS now: writing 5 to clear_refs (Linux 4.0+). Returns
// false where that is not allowed, and the peak then counts from the process's start.
function resetPeakRss(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

// User plus system CPU time the process has used so far, in microseconds (clock-tick resolution).
function readCpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[UTIME_INDEX]) + Number(fields[STIME_INDEX]);
  if (!Number.isFinite(ticks)) throw new Error(`unreadable /proc/${pid}/stat`);
  return (ticks * 1e6) / CLOCK_TICKS_PER_S;
}

// The nearest-rank percentile `p` (0–100) of `values`; undefined when there are none.
function toPercentile(values, p) {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

// The median of `values`, averaging the middle pair; undefined when there are none.
function toMedian(values) {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function toSum(values) {
  return values.reduce((sum, value) => sum + value, 0);
}

// Rejects with a clear message when `promise` takes longer than `ms`.
async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// The subject order for a round: reversed every other round, so neither side always goes first.
function toRoundOrder(names, round) {
  return round % 2 === 0 ? names : [...names].reverse();
}

// CPU time a subject has used so far, µs. Every subject is a child process (undici in-process too,
// in a process of its own), so each one's CPU is read the same way: from /proc.
function readSubjectCpu(subject) {
  return readCpuMicros(subject.pid);
}

// The child subjects' peak RSS so far, in MiB (VmHWM never goes down).
function readPeakRssEach(subjects) {
  const peakOf = (subject) => (subject instanceof Error ? subject : readMemory(subject.pid).peakRssBytes / BYTES_PER_MIB);
  return { fenbs: peakOf(subjects.fenbs), echo: peakOf(subjects.echo) };
}

// Each child subject's peak RSS above its resting RSS (`restingBytes`, read before the large
// messages), in MiB.
function readPeakAboveRestingEach(subjects, restingBytes) {
  const aboveOf = (name) => {
    const subject = subjects[name];
    if (subject instanceof Error) return subject;
    return (readMemory(subject.pid).peakRssBytes - restingBytes[name]) / BYTES_PER_MIB;
  };
  return { fenbs: aboveOf('fenbs'), echo: aboveOf('echo') };
}

// Applies `summarize` to each subject's samples, keeping errors as they are.
function summarizeEach(results, summarize) {
  return Object.fromEntries(Object.entries(results).map(([name, samples]) => [name, samples instanceof Error ? samples : summarize(samples)]));
}

// The bench's state: configuration, figures measured so far and notes for the reader.
export class BenchRun {
  constructor({ config, bridgePath, leastBridgePath, origin, log }) {
    this.config = config;
    this.bridgePath = bridgePath;
    this.leastBridgePath = leastBridgePath;
    this.origin = origin;
    this.log = log;
    this.measured = {};
    // Its own one-connection agent, so that looking at the stats does not disturb the subjects' pools.
    this.statsAgent = new Agent({ connections: 1 });
    this.notes = new Set();
  }

  close() {
    return this.statsAgent.close();
  }

  // The bench server's connection counts; each look resets the peak to the connections now open.
  async readServerStats() {
    const { statusCode, body } = await request(`${this.origin}/stats`, { dispatcher: this.statsAgent });
    if (statusCode !== 200) {
      await body.dump();
      throw new Error(`bench server answered ${statusCode} to GET /stats`);
    }
    return body.json();
  }

  record(key, measured) {
    this.measured[key] = measured;
  }

  createBridge(path, nodePath, { askProgress = false } = {}) {
    if (!existsSync(this.bridgePath)) {
      throw new Error(`${this.bridgePath} does not exist; run \`npm run build\` first`);
    }
    return new BridgeSubject({ bridgePath: this.bridgePath, url: `${this.origin}${path}`, nodePath, askProgress });
  }

  // The least undici bridge (bench/least-bridge.ts), or throws why it could not be built.
  createLeastBridge(path, nodePath) {
    if (this.leastBridgePath instanceof Error) throw this.leastBridgePath;
    return new BridgeSubject({ bridgePath: this.leastBridgePath, url: `${this.origin}${path}`, nodePath, name: 'least undici bridge' });
  }

  // Creates and initializes a subject; on failure returns the Error in its place.
  async start(create) {
    let subject;
    try {
      subject = create();
      await withTimeout(subject.initialize(), START_TIMEOUT_MS, `${subject.name} initialize`);
      return subject;
    } catch (error) {
      await subject?.kill?.();
      return error;
    }
  }

  // Closes a subject; a child that does not exit 0 after stdin EOF earns a note.
  async finish(subject) {
    if (subject instanceof Error) return;
    const exit = await subject.close();
    if (subject.child === undefined) return;
    if (exit.code !== 0) {
      this.notes.add(`${subject.name} exited with code ${exit.code} (signal ${exit.signal}) after stdin EOF`);
    }
    if (subject.name === 'fenbs-mcp' && subject.child.stderrBytes > 0) {
      this.notes.add(
        `fenbs-mcp wrote to stderr at --log-level warn (e.g. ${subject.child.stderrBytes} bytes): ` +
          subject.child.stderrTail.trim().split('\n').slice(-2).join(' ⏎ ').slice(0, 300),
      );
    }
    if (subject.child.unmatchedCount > 0) {
      this.notes.add(`${subject.name} wrote ${subject.child.unmatchedCount} stdout line(s) that answered no request`);
    }
  }

  // Settles each child subject with one small call, reads its RSS at rest and resets its peak to it,
  // so that the peak read later belongs to what came after. A subject that fails becomes its Error.
  async readResting(subjects, names) {
    const restingBytes = {};
    for (const name of names) {
      const subject = subjects[name];
      if (subject instanceof Error) continue;
      try {
        await withTimeout(subject.call(0), START_TIMEOUT_MS, `${subject.name}: a small call`);
        restingBytes[name] = readMemory(subject.pid).rssBytes;
        if (!resetPeakRss(subject.pid)) {
          this.notes.add('/proc/<pid>/clear_refs could not reset peak RSS: peaks above resting count from each start');
        }
      } catch (error) {
        subjects[name] = error;
        await subject.kill?.();
      }
    }
    return restingBytes;
  }

  // Runs `measure` for every live subject, `rounds` times, alternating the order. A subject that
  // fails is replaced by its Error in `subjects` and measured no further; one that has spent
  // `budgetMs` on this figure keeps the rounds it has, so a slow subject cannot stall the run.
  async interleave(subjects, rounds, what, measure, timeoutMs = this.config.timeoutMs) {
    const names = Object.keys(subjects);
    const results = Object.fromEntries(names.map((name) => [name, []]));
    const spentMs = Object.fromEntries(names.map((name) => [name, 0]));
    for (let round = 0; round < rounds; round += 1) {
      for (const name of toRoundOrder(names, round)) {
        const subject = subjects[name];
        if (subject instanceof Error) {
          results[name] = subject;
          continue;
        }
        if (spentMs[name] > this.config.budgetMs) {
          this.notes.add(`${subject.name}: ${what}: ${results[name].length} of ${rounds} rounds (time budget spent)`);
          continue;
        }
        const startedAt = performance.now();
        try {
          const sample = await withTimeout(measure(subject, { name, round }), timeoutMs, `${subject.name}: ${what}`);
          results[name].push(sample);
          spentMs[name] += performance.now() - startedAt;
        } catch (error) {
          subjects[name] = error;
          results[name] = error;
          await subject.kill?.();
        }
      }
    }
    return results;
  }

  async warmUp(subjects) {
    await this.interleave(subjects, 1, 'warm-up', (subject) => subject.timeInFlight(this.config.warmUp, WARM_UP_IN_FLIGHT));
  }

  // Round trips one at a time: latency percentiles and CPU per message.
  async measureSequential(subjects, mode) {
    const { sequentialPerRound, rounds } = this.config;
    const results = await this.interleave(subjects, rounds, 'sequential round trips', async (subject) => {
      const cpuBefore = readSubjectCpu(subject);
      const samplesMicros = await subject.timeSequential(sequentialPerRound);
      return { samplesMicros, cpuMicros: readSubjectCpu(subject) - cpuBefore, count: sequentialPerRound };
    });
    const allSamples = (rounds_) => rounds_.flatMap((round) => round.samplesMicros);
    this.record(
      `sequentialP50${mode}`,
      summarizeEach(results, (r) => toPercentile(allSamples(r), 50)),
    );
    this.record(
      `sequentialP99${mode}`,
      summarizeEach(results, (r) => toPercentile(allSamples(r), 99)),
    );
    return results;
  }

  // A fixed number of calls with `inFlight` outstanding: median rate and CPU per message.
  async measureThroughput(subjects, inFlight, mode) {
    const total = this.config.throughput[inFlight];
    const results = await this.interleave(subjects, this.config.throughputRounds, `${inFlight} in flight`, async (subject) => {
      const cpuBefore = readSubjectCpu(subject);
      const elapsedMs = await subject.timeInFlight(total, inFlight);
      return { rate: (total * 1000) / elapsedMs, cpuMicros: readSubjectCpu(subject) - cpuBefore, count: total };
    });
    this.record(
      `throughput${inFlight}${mode}`,
      summarizeEach(results, (r) => toMedian(r.map((round) => round.rate))),
    );
    return results;
  }

  // Spawn to the initialize reply, bridge, least undici bridge and echo child alike, on the Node binary
  // at `nodePath`; `suffix` names the figures of a Node other than the one running the bench. The
  // least bridge (bench/least-bridge.ts, `this.leastBridgePath`; an Error when it could not be built) is
  // the floor of a start with undici: fenbs-mcp's loader and build, and a bundle that does no more
  // than dispatch() each line.
  async measureColdStart(nodePath = process.execPath, suffix = '') {
    const createOf = {
      fenbs: () => this.createBridge('/json', nodePath),
      least: () => this.createLeastBridge('/json', nodePath),
      echo: () => new EchoSubject({ nodePath }),
    };
    const names = Object.keys(createOf);
    const perSubject = () => Object.fromEntries(names.map((name) => [name, []]));
    const startMs = perSubject();
    const rssMiB = perSubject();
    const settledRssMiB = perSubject();
    // The first start after a build has no code cache yet (bin/ writes one when a run ends): it is
    // counted in the median like any other and also shown on its own. The same for the least bridge,
    // which starts through a copy of bin/.
    const removed = removeCodeCaches(this.bridgePath);
    const leastRemoved = !(this.leastBridgePath instanceof Error) && removeCodeCaches(this.leastBridgePath);
    // The Node binary's own first run (its pages read from disk) is nobody's cost here: whichever
    // subject went first would pay it.
    execFileSync(nodePath, ['-e', '0']);
    for (let round = 0; round < this.config.coldStarts; round += 1) {
      for (const name of toRoundOrder(names, round)) {
        if (startMs[name] instanceof Error) continue;
        let subject;
        try {
          const spawnedAt = performance.now();
          subject = createOf[name]();
          await withTimeout(subject.initialize(), START_TIMEOUT_MS, `${subject.name} initialize`);
          startMs[name].push(performance.now() - spawnedAt);
          rssMiB[name].push(readMemory(subject.pid).rssBytes / BYTES_PER_MIB);
          // V8 goes on compiling in the background after the first answer (undici's parser is
          // tiered up): the RSS a moment later is the one a client lives with.
          await new Promise((resolve) => setTimeout(resolve, SETTLED_RSS_DELAY_MS));
          settledRssMiB[name].push(readMemory(subject.pid).rssBytes / BYTES_PER_MIB);
          await this.finish(subject);
        } catch (error) {
          startMs[name] = error;
          rssMiB[name] = error;
          settledRssMiB[name] = error;
          await subject?.kill();
        }
      }
    }
    this.record(`coldStart${suffix}`, summarizeEach(startMs, toMedian));
    this.record(`coldStartLeast${suffix}`, summarizeEach(startMs, toMedian));
    const firstOf = (samples) => (samples instanceof Error ? samples : samples[0]);
    const noCache = new Error('the bridge keeps no code cache next to its bundle');
    const first = {
      fenbs: removed ? firstOf(startMs.fenbs) : noCache,
      least: leastRemoved ? firstOf(startMs.least) : noCache,
      echo: firstOf(startMs.echo),
    };
    this.record(`coldStartFirst${suffix}`, first);
    this.record(`coldStartFirstLeast${suffix}`, first);
    this.record(`rssAfterStart${suffix}`, summarizeEach(rssMiB, toMedian));
    this.record(`rssAfterStartLeast${suffix}`, summarizeEach(rssMiB, toMedian));
    this.record(`rssSettled${suffix}`, summarizeEach(settledRssMiB, toMedian));
  }

  // Where the least undici bridge stands against the limit (undici in-process + echo child)
  // on a figure both were measured for: the share of a target that any undici bridge already uses.
  noteLeastAgainstLimit(key, what) {
    const { least, undici, echo } = this.measured[key] ?? {};
    if (![least, undici, echo].every((value) => typeof value === 'number')) return;
    this.notes.add(
      `${what}: the least undici bridge ${least.toFixed(0)} µs = ${(least / (undici + echo)).toFixed(2)}× undici + echo (${(undici + echo).toFixed(0)} µs)`,
    );
  }

  async measureJsonMode() {
    const subjects = {
      fenbs: await this.start(() => this.createBridge('/json')),
      undici: await this.start(() => new UndiciChildSubject({ origin: this.origin, path: '/json' })),
      echo: await this.start(() => new EchoSubject()),
    };
    // The least undici bridge takes part in the sequential and 64-in-flight rounds, interleaved with
    // the others: the latency, CPU and throughput of a stdio bridge that does nothing but dispatch() each line.
    const least = await this.start(() => this.createLeastBridge('/json'));
    await this.warmUp({ ...subjects, least });
    this.log('sequential round trips, JSON');
    const sequential = await this.measureSequential({ ...subjects, least }, 'JSON');
    this.record('cpuPerMessageSequential', summarizeEach(sequential, toCpuPerMessage));
    this.record('sequentialP50JSONLeast', this.measured.sequentialP50JSON);
    this.record('cpuPerMessageSequentialLeast', this.measured.cpuPerMessageSequential);
    this.noteLeastAgainstLimit('sequentialP50JSON', 'sequential p50, JSON');
    this.noteLeastAgainstLimit('cpuPerMessageSequential', 'CPU per message, sequential, JSON');
    for (const inFlight of [1, 16, 64]) {
      this.log(`throughput, ${inFlight} in flight, JSON`);
      // At 64 in flight the least bridge's rounds interleave with the others': issue 34's contention figure.
      const throughput = await this.measureThroughput(inFlight === 64 ? { ...subjects, least } : subjects, inFlight, 'JSON');
      if (inFlight === 64) {
        this.record('cpuPerMessage64', summarizeEach(throughput, toCpuPerMessage));
        this.record('throughput64JSONLeast', this.measured.throughput64JSON);
      }
    }
    await this.finish(least);
    this.record('peakRss', readPeakRssEach(subjects));
    this.log(`${this.config.pipelined} pipelined requests`);
    const pipelined = await this.interleave(subjects, this.config.pipelinedRounds, 'pipelined requests', async (subject) => {
      const before = await this.readServerStats();
      const elapsedMs = await subject.timePipelined(this.config.pipelined);
      const after = await this.readServerStats();
      // The stats look itself opens no connection: its agent keeps its one socket alive.
      return { elapsedMs, newConnections: after.acceptedConnections - before.acceptedConnections };
    });
    this.record(
      'pipelined',
      summarizeEach(pipelined, (r) => toMedian(r.map((round) => round.elapsedMs))),
    );
    for (const name of ['fenbs', 'undici']) {
      const rounds = pipelined[name];
      if (rounds instanceof Error || rounds.length === 0) continue;
      const counts = rounds.map((round) => round.newConnections).join(', ');
      this.notes.add(
        `${name === 'fenbs' ? 'fenbs-mcp' : 'undici in-process (pool of 64)'} opened ${counts} new connection(s) ` +
          `per round of ${this.config.pipelined} pipelined requests`,
      );
    }
    this.record('pipelinedPeakRss', readPeakRssEach(subjects));
    await Promise.all(Object.values(subjects).map((subject) => this.finish(subject)));
  }

  // Event streams with one notification before the result. Without `askProgress` it is a log
  // message; with it the call asks for progress (as SDK clients do) and the notification is its
  // progress, after which fenbs-mcp holds the response back for PROGRESS_RESPONSE_GAP_MS by design
  // (so that clients that drop a progress read together with its result see it): the two kinds of
  // figure tell the stream path's own cost from that wait.
  async measureSseMode({ askProgress = false } = {}) {
    const mode = askProgress ? 'SSEProgress' : 'SSE';
    const what = askProgress ? 'SSE with progress asked for' : 'SSE';
    const subjects = {
      fenbs: await this.start(() => this.createBridge('/sse', undefined, { askProgress })),
      undici: await this.start(() => new UndiciChildSubject({ origin: this.origin, path: '/sse', askProgress })),
      echo: await this.start(() => new EchoSubject()),
    };
    // Without progress, the least undici bridge (each event's data: line written, nothing parsed)
    // takes part in the sequential and 16-in-flight rounds; with progress fenbs-mcp waits by design.
    const least = askProgress ? undefined : await this.start(() => this.createLeastBridge('/sse'));
    const withLeast = least === undefined ? subjects : { ...subjects, least };
    await this.warmUp(withLeast);
    this.log(`sequential round trips, ${what}`);
    await this.measureSequential(withLeast, mode);
    if (least !== undefined) this.record(`sequentialP50${mode}Least`, this.measured[`sequentialP50${mode}`]);
    for (const inFlight of [16, 64]) {
      this.log(`throughput, ${inFlight} in flight, ${what}`);
      await this.measureThroughput(inFlight === 16 ? withLeast : subjects, inFlight, mode);
      if (least !== undefined && inFlight === 16) this.record(`throughput16${mode}Least`, this.measured[`throughput16${mode}`]);
    }
    if (least !== undefined) await this.finish(least);
    const bridge = subjects.fenbs;
    if (!(bridge instanceof Error)) {
      const calls = bridge.nextId - 1;
      const forwarded = bridge.child.notificationCount;
      if (forwarded !== calls) {
        this.notes.add(`in ${what} mode fenbs-mcp forwarded ${forwarded} notifications for ${calls} tool calls`);
      }
    }
    await Promise.all(Object.values(subjects).map((subject) => this.finish(subject)));
  }

  // The same event stream without its notification: the result alone.
  async measureSseBareMode() {
    const subjects = {
      fenbs: await this.start(() => this.createBridge('/sse-bare')),
      undici: await this.start(() => new UndiciChildSubject({ origin: this.origin, path: '/sse-bare' })),
      echo: await this.start(() => new EchoSubject()),
    };
    await this.warmUp(subjects);
    this.log('sequential round trips, SSE with the result only');
    await this.measureSequential(subjects, 'SSEBare');
    await Promise.all(Object.values(subjects).map((subject) => this.finish(subject)));
  }

  // One large reply at a time, on fresh processes so that peak RSS belongs to that size. The stdio
  // part of the limit is the one-way reply writer: the reply's bytes cross one pipe, as the bridge's do.
  async measureLargeReplies() {
    const undici = await this.start(() => new UndiciChildSubject({ origin: this.origin, path: '/json' }));
    for (const mib of [1, 10, 50]) {
      this.log(`${mib} MiB replies`);
      const bytes = mib * BYTES_PER_MIB;
      const subjects = {
        fenbs: await this.start(() => this.createBridge('/json')),
        undici,
        echo: await this.start(() => new ReplyWriterSubject()),
      };
      const restingBytes = await this.readResting(subjects, ['fenbs', 'echo']);
      if (!(subjects.echo instanceof Error)) {
        try {
          await withTimeout(subjects.echo.prepare(bytes), this.config.timeoutMs, `${subjects.echo.name}: prepare`);
        } catch (error) {
          await subjects.echo.kill();
          subjects.echo = error;
        }
      }
      const times = await this.interleave(subjects, this.config.largeRounds[mib], `${mib} MiB reply`, async (subject, at) => {
        const { elapsedMs, reply } = await subject.timeCall(bytes);
        if (at.name === 'fenbs' && at.round === 0) checkLargeLine(subject.name, reply, bytes);
        return elapsedMs;
      });
      this.record(`reply${mib}MiBTime`, summarizeEach(times, toMedian));
      this.record(`reply${mib}MiBPeakRss`, readPeakAboveRestingEach(subjects, restingBytes));
      await this.finish(subjects.fenbs);
      await this.finish(subjects.echo);
    }
    await this.finish(undici);
  }

  // One large request line (a tools/call whose argument is `mib` MiB), on fresh processes so that
  // peak RSS belongs to that line. The remote answers small; the limit is the echo child's round
  // trip of the same line (in on stdin, out on stdout, as the bridge's goes in on stdin, out on HTTP).
  async measureLargeRequest(mib) {
    this.log(`${mib} MiB request lines`);
    const blobJson = toBlobJson(mib * BYTES_PER_MIB);
    const subjects = {
      fenbs: await this.start(() => this.createBridge('/json')),
      echo: await this.start(() => new EchoSubject()),
    };
    const restingBytes = await this.readResting(subjects, ['fenbs', 'echo']);
    const times = await this.interleave(subjects, this.config.largeRounds[mib], `${mib} MiB request line`, async (subject) => {
      const startedAt = performance.now();
      await subject.callWithBlob(blobJson);
      return performance.now() - startedAt;
    });
    this.record(`request${mib}MiBTime`, summarizeEach(times, toMedian));
    this.record(`request${mib}MiBPeakRss`, readPeakAboveRestingEach(subjects, restingBytes));
    await this.finish(subjects.fenbs);
    await this.finish(subjects.echo);
  }

  // One long-lived process per subject: RSS after `growthFrom` and after `growthTo` messages.
  async measureGrowth() {
    const { growthFrom, growthTo, growthTimeoutMs } = this.config;
    this.log(`RSS growth over ${growthTo} messages`);
    const subjects = {
      fenbs: await this.start(() => this.createBridge('/json')),
      echo: await this.start(() => new EchoSubject()),
    };
    const factors = await this.interleave(
      subjects,
      1,
      'RSS growth',
      async (subject) => {
        await subject.timeInFlight(growthFrom, GROWTH_IN_FLIGHT);
        const rssFrom = readMemory(subject.pid).rssBytes;
        await subject.timeInFlight(growthTo - growthFrom, GROWTH_IN_FLIGHT);
        return readMemory(subject.pid).rssBytes / rssFrom;
      },
      growthTimeoutMs,
    );
    this.record(
      'rssGrowth',
      summarizeEach(factors, ([factor]) => factor),
    );
    await Promise.all(Object.values(subjects).map((subject) => this.finish(subject)));
  }
}

function toCpuPerMessage(rounds) {
  return toSum(rounds.map((round) => round.cpuMicros)) / toSum(rounds.map((round) => round.count));
}
