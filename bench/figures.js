// The catalogue of figures (what each measures, how its limit is formed, its target) and its table.
//
// A figure holds the bridge's value (`fenbs`) and the parts of its limit (`undici`, `echo`); a part
// is a number, or an Error saying why it could not be measured. The limit is what any stdio-to-HTTP
// bridge would cost on this machine in this run: the HTTP hop alone (undici in-process) and the
// stdio hop alone (the echo child), added where they happen one after the other.

const sum = (parts) => parts.undici + parts.echo;
const echoOnly = (parts) => parts.echo;
const undiciOnly = (parts) => parts.undici;
// Pipelined stages overlap, so the slower hop bounds the whole.
const slowerHop = (parts) => Math.max(parts.undici, parts.echo);

const formatCount = (count) => count.toLocaleString('en-US');

// The figures in table order; `counts` are the run's sizes (smaller with --quick).
export function describeFigures(counts) {
  const large = (mib, target) => [
    {
      key: `reply${mib}MiBTime`,
      label: `${mib} MiB reply, time`,
      unit: 'ms',
      needs: ['undici', 'echo'],
      limitIs: 'undici + echo',
      limit: sum,
      target: target.time,
    },
    {
      key: `reply${mib}MiBPeakRss`,
      label: `${mib} MiB reply, peak RSS (fresh process)`,
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: target.peak,
    },
  ];
  return [
    ...['JSON', 'SSE'].flatMap((mode) => [
      {
        key: `sequentialP50${mode}`,
        label: `sequential round trip p50, ${mode}`,
        unit: 'µs',
        needs: ['undici', 'echo'],
        limitIs: 'undici + echo',
        limit: sum,
        target: { on: 'ratio', op: '<=', value: 1.3 },
      },
      {
        key: `sequentialP99${mode}`,
        label: `sequential round trip p99, ${mode}`,
        unit: 'µs',
        needs: ['undici', 'echo'],
        limitIs: 'undici + echo',
        limit: sum,
      },
    ]),
    ...[1, 16, 64].map((inFlight) => ({
      key: `throughput${inFlight}JSON`,
      label: `throughput, ${inFlight} in flight, JSON`,
      unit: 'msg/s',
      needs: ['undici', 'echo'],
      limitIs: 'undici',
      limit: undiciOnly,
      target: inFlight === 64 ? { on: 'ratio', op: '>=', value: 0.7 } : undefined,
    })),
    {
      key: 'throughput64SSE',
      label: 'throughput, 64 in flight, SSE',
      unit: 'msg/s',
      needs: ['undici', 'echo'],
      limitIs: 'undici',
      limit: undiciOnly,
      target: { on: 'ratio', op: '>=', value: 0.7 },
    },
    {
      key: 'coldStart',
      label: `cold start, spawn → initialize reply (median of ${counts.coldStarts})`,
      unit: 'ms',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: { on: 'ratio', op: '<=', value: 1.5 },
    },
    {
      key: 'rssAfterStart',
      label: 'RSS after start (median)',
      unit: 'MiB',
      needs: ['echo'],
      limitIs: 'echo',
      limit: echoOnly,
      target: { on: 'value', op: '<=', value: 60 },
    },
    {
      key: 'peakRss',
      label: 'peak RSS after the JSON runs',
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
      target: { on: 'value', op: '<=', value: 150 },
    },
    {
      key: 'cpuPerMessage64',
      label: 'CPU per message, 64 in flight, JSON',
      unit: 'µs',
      needs: ['undici', 'echo'],
      limitIs: 'undici + echo',
      limit: sum,
      target: { on: 'value', op: '<=', value: 150 },
    },
    ...large(1, {}),
    ...large(10, { time: { on: 'ratio', op: '<=', value: 1.5 } }),
    ...large(50, { peak: { on: 'value', op: '<=', value: 200 } }),
    {
      key: 'pipelined',
      label: `${formatCount(counts.pipelined)} pipelined requests, time`,
      unit: 'ms',
      needs: ['undici', 'echo'],
      limitIs: 'slower of undici, echo',
      limit: slowerHop,
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
export function resolveFigure(spec, measured = {}) {
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
  const op = target.op === '<=' ? '≤' : '≥';
  return target.on === 'ratio' ? `ratio ${op} ${target.value}` : `${op} ${formatValue(target.value, unit)}`;
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
  const lines = [
    toRow(['figure', 'fenbs-mcp', 'limit', 'limit is', 'ratio', 'target', 'met?']),
    toRow(['---', '---:', '---:', '---', '---:', '---', '---']),
  ];
  for (const figure of figures) {
    lines.push(
      toRow([
        figure.label,
        formatValue(figure.fenbs, figure.unit),
        formatValue(figure.limit, figure.unit),
        figure.limitIs,
        figure.ratio === undefined ? 'missing' : `${figure.ratio.toFixed(2)}×`,
        formatTarget(figure.target, figure.unit),
        formatMet(figure),
      ]),
    );
  }
  return lines.join('\n');
}

// The parts each limit was built from, so a reader can see which hop dominates.
function formatParts(figures) {
  const lines = [toRow(['figure', 'undici in-process', 'echo child']), toRow(['---', '---:', '---:'])];
  for (const figure of figures) {
    const part = (name) => (name in figure.parts ? formatValue(figure.parts[name], figure.unit) : '—');
    lines.push(toRow([figure.label, part('undici'), part('echo')]));
  }
  return lines.join('\n');
}

export function formatReport({ environment, figures, notes }) {
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
