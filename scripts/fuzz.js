// Pipes generated hostile stdin lines through the built bridge against a local server; counts crashes, hangs and bad stdout.
//
//   npm run build && node scripts/fuzz.js [--lines N] [--seed S] [--window W] [--max-seconds T]
//
// Not part of npm test. Every line's expected answer is known when it is generated: a request gets
// exactly one reply with its id, a line that is not a message gets one reply with id null, a
// notification or response gets none. Exit code 0 only when crashes, hangs, non-JSON stdout lines,
// missing, duplicate and unexpected replies are all zero.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/fenbs-mcp.js', import.meta.url));
const MAX_LINE_BYTES = 4 * 1024 * 1024;
/** No stdout line for this long while replies are outstanding counts as a hang. */
const HANG_MS = 30_000;
/** After stdin ends the bridge must be gone within this. */
const EXIT_MS = 30_000;

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} expects a whole number`);
  return value;
}
const LINES = option('lines', 100_000);
const SEED = option('seed', 20261130);
const WINDOW = option('window', 256);
const MAX_SECONDS = option('max-seconds', 120 + Math.ceil(LINES / 500));

// mulberry32: a small seeded PRNG, so a failing run can be repeated with --seed.
let state = SEED >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(random() * n);
const pick = (items) => items[int(items.length)];

const ALPHABET = [
  '{',
  '}',
  '[',
  ']',
  '"',
  ':',
  ',',
  '\\',
  'a',
  '0',
  '-',
  'e',
  ' ',
  '\t',
  '\r',
  'é',
  '世',
  '🔧',
  '\u2028',
  '\u0000',
  '\ud800',
  '\udfff',
  '\uFEFF',
];
function randomString(max) {
  let text = '';
  for (let i = int(max); i > 0; i--) text += random() < 0.7 ? String.fromCharCode(32 + int(95)) : pick(ALPHABET);
  return text;
}
function randomJson(depth) {
  const roll = int(depth > 3 ? 6 : 8);
  if (roll === 0) return null;
  if (roll === 1) return random() < 0.5;
  if (roll === 2) return pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, Number.MIN_VALUE, int(1e9)]);
  if (roll === 3 || roll === 4) return randomString(20);
  if (roll === 5) return pick(['\r\nX-Injected: yes', '=?base64?x?=', '', ' padded ']);
  if (roll === 6) return Array.from({ length: int(4) }, () => randomJson(depth + 1));
  const object = {};
  for (let i = int(4); i > 0; i--) object[randomString(8)] = randomJson(depth + 1);
  return object;
}
const MODERN = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
const METHODS = ['tools/call', 'tools/list', 'prompts/get', 'resources/read', 'ping', 'fuzz/method'];

let serial = 0;
/** One generated line: its bytes, the ids that must each get one reply, and how many id-null replies it earns. */
function generate() {
  const roll = random() * 1000;
  const text = (line, ids = [], nulls = 0) => ({ bytes: Buffer.from(`${line}${random() < 0.1 ? '\r' : ''}\n`, 'utf8'), ids, nulls });
  if (roll < 380) {
    const id = `r${++serial}`;
    const method = random() < 0.1 ? `fuzz/${randomString(12)}` : pick(METHODS);
    const params = { name: randomString(16), uri: randomString(16), arguments: randomJson(0) };
    if (random() < 0.3) params._meta = MODERN;
    if (random() < 0.1) params.n = random() < 0.5 ? '__HUGE__' : '__INT64__';
    const line = JSON.stringify({ jsonrpc: '2.0', id, method, params }).replace('"__HUGE__"', '1e400').replace('"__INT64__"', '1234567890123456789');
    return text(line, [id]);
  }
  if (roll < 430)
    return text(JSON.stringify({ jsonrpc: '2.0', method: `notifications/${pick(['fuzz', 'message', 'progress'])}`, params: { data: randomJson(1) } }));
  if (roll < 460) return text(JSON.stringify({ jsonrpc: '2.0', id: `s${++serial}`, result: randomJson(1) }));
  if (roll < 610) return text(`~${randomString(120)}`.replace(/\n/g, ' '), [], 1);
  if (roll >= 680 && roll < 700) {
    // Not UTF-8, but only inside params: the id is intact, so its -32700 carries that id.
    const id = `v${++serial}`;
    const broken = Array.from({ length: 1 + int(8) }, () => 0x80 + int(0x80)).filter((b) => b !== 0x0a);
    return {
      bytes: Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":"${id}","method":"m","params":{"s":"`), Buffer.from([0xff, ...broken]), Buffer.from('"}}\n')]),
      ids: [id],
      nulls: 0,
    };
  }
  if (roll < 700) {
    const bytes = [0xff];
    for (let i = int(120); i > 0; i--) bytes.push(int(256));
    return { bytes: Buffer.from([...bytes.filter((b) => b !== 0x0a), 0x0a]), ids: [], nulls: 1 };
  }
  if (roll < 750) return text(JSON.stringify(pick([randomString(10), 42, true, null, -0.5])), [], 1);
  if (roll < 800) {
    const ids = Array.from({ length: int(4) }, () => `b${++serial}`);
    // A batch: one -32600 per usable id, or one with id null when it has none.
    return ids.length === 0
      ? text(JSON.stringify([1, randomString(6), null, [{}]]), [], 1)
      : text(JSON.stringify(ids.map((id) => ({ jsonrpc: '2.0', id, method: 'x' }))), ids);
  }
  if (roll < 840) return text(`{"jsonrpc":"2.0","id":${pick(['null', '1.5', 'true', '1e400', '12345678901234567890', '{}', '[]'])},"method":"m"}`, [], 1);
  if (roll < 870) return text(JSON.stringify({ jsonrpc: pick(['1.0', 2, undefined]), id: null, method: 'x' }), [], 1);
  if (roll < 880) {
    const depth = random() < 0.01 ? 100_000 : 100 + int(5000);
    if (random() < 0.5) return text(`${'['.repeat(depth)}${']'.repeat(depth)}`, [], 1);
    const id = `d${++serial}`;
    return text(`{"jsonrpc":"2.0","id":"${id}","method":"fuzz/deep","params":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`, [id]);
  }
  if (roll < 880.2) {
    if (random() < 0.2) return text(`~${'x'.repeat(MAX_LINE_BYTES + 1024)}`, [], 1);
    const id = `l${++serial}`;
    return text(JSON.stringify({ jsonrpc: '2.0', id, method: 'fuzz/long', params: { blob: 'y'.repeat(256 * 1024 + int(2 * 1024 * 1024)) } }), [id]);
  }
  if (roll < 900) return text(pick(['', ' ', '\t', '\r']));
  return text(`{"jsonrpc":"2.0","id":"u${++serial}","method":"fuzz/${pick(['\\ud800', '\\udfff\\ud800', '\\u0000', 'é'])}","params":{"s":"\\udc00"}}`, [
    `u${serial}`,
  ]);
}

/** The remote: JSON or SSE answers (with a notification first), 202 for everything without an id. */
async function startServer() {
  let posts = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      posts++;
      let message;
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end('not json');
        return;
      }
      if (req.method !== 'POST' || message === null || typeof message !== 'object' || message.id === undefined || message.method === undefined) {
        res.writeHead(req.method === 'POST' || req.method === 'DELETE' ? 202 : 405).end();
        return;
      }
      const reply = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { echo: String(message.method).slice(0, 40) } });
      if (posts % 3 === 0) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`: keep-alive\n\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\ndata: ${reply}\n\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(reply);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${server.address().port}/mcp`, posts: () => posts };
}

async function main() {
  const started = Date.now();
  const remote = await startServer();
  const child = spawn(
    process.execPath,
    [BIN, '--url', remote.url, '--log-level', 'error', '--max-line-bytes', String(MAX_LINE_BYTES), '--request-timeout', '60000'],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const counts = {
    sent: 0,
    replies: 0,
    nullReplies: 0,
    expectedNull: 0,
    serverMessages: 0,
    nonJson: 0,
    notJsonRpc: 0,
    duplicates: 0,
    unexpected: 0,
    missing: 0,
    crashes: 0,
    hangs: 0,
    errorLogs: 0,
  };
  const samples = [];
  const awaiting = new Set();
  let outstanding = 0;
  let lastOutput = Date.now();
  let wake;
  let exited = false;
  const exit = once(child, 'exit').then(([code, signal]) => ((exited = true), { code, signal }));

  let rest = Buffer.alloc(0);
  child.stdout.on('data', (chunk) => {
    lastOutput = Date.now();
    let data = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
    let newline = data.indexOf(0x0a);
    while (newline !== -1) {
      inspect(data.subarray(0, newline).toString('utf8'));
      data = data.subarray(newline + 1);
      newline = data.indexOf(0x0a);
    }
    rest = Buffer.from(data);
    if (wake !== undefined && outstanding < WINDOW / 2) wake();
  });
  let stderrTail = '';
  child.stderr.on('data', (chunk) => {
    const text = chunk.toString('utf8');
    counts.errorLogs += (text.match(/"level":(50|60)/g) ?? []).length;
    stderrTail = (stderrTail + text).slice(-2000);
  });
  child.stdin.on('error', () => undefined);

  function inspect(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      counts.nonJson++;
      if (samples.length < 5) samples.push(`non-JSON stdout: ${line.slice(0, 200)}`);
      return;
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0') {
      counts.notJsonRpc++;
      if (samples.length < 5) samples.push(`not JSON-RPC: ${line.slice(0, 200)}`);
      return;
    }
    if ('method' in message) {
      counts.serverMessages++;
      return;
    }
    counts.replies++;
    outstanding--;
    if (message.id === null) counts.nullReplies++;
    else if (awaiting.delete(message.id)) return;
    else if (typeof message.id === 'string' && /^[rbdlu]\d+$/.test(message.id)) counts.duplicates++;
    else counts.unexpected++;
  }

  const deadline = started + MAX_SECONDS * 1000;
  const stalled = () => outstanding > 0 && Date.now() - lastOutput > HANG_MS;
  const watchdog = setInterval(() => wake?.(), 1000);
  try {
    for (let i = 0; i < LINES && !exited; i++) {
      const line = generate();
      for (const id of line.ids) awaiting.add(id);
      counts.expectedNull += line.nulls;
      outstanding += line.ids.length + line.nulls;
      counts.sent++;
      if (!child.stdin.write(line.bytes)) await Promise.race([once(child.stdin, 'drain'), exit]);
      while (outstanding >= WINDOW && !exited && !stalled() && Date.now() < deadline) {
        await new Promise((resolve) => (wake = resolve));
        wake = undefined;
      }
      if (stalled() || Date.now() >= deadline) {
        counts.hangs++;
        samples.push(`no progress: ${outstanding} replies outstanding after ${counts.sent} lines`);
        break;
      }
      if (i % 100_000 === 99_999)
        process.stderr.write(`fuzz: ${i + 1} lines sent, ${counts.replies} replies, ${Math.round((Date.now() - started) / 1000)} s\n`);
    }
    if (!exited && counts.hangs === 0) {
      while (outstanding > 0 && !exited && !stalled() && Date.now() < deadline) {
        await new Promise((resolve) => (wake = resolve));
        wake = undefined;
      }
      if (outstanding > 0 && !exited) counts.hangs++;
    }
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_MS);
    const { code, signal } = await exit;
    clearTimeout(timer);
    if (signal === 'SIGKILL') {
      counts.hangs++;
      samples.push('the bridge did not exit after stdin ended');
    } else if (code !== 0 || signal !== null) {
      counts.crashes++;
      samples.push(`the bridge exited with code ${code} signal ${signal}: ${stderrTail}`);
    }
  } finally {
    clearInterval(watchdog);
    remote.server.closeAllConnections();
    remote.server.close();
  }
  counts.missing = awaiting.size;
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  for (const sample of samples) process.stderr.write(`fuzz: ${sample}\n`);
  const clean =
    ['crashes', 'hangs', 'nonJson', 'notJsonRpc', 'duplicates', 'unexpected', 'missing'].every((key) => counts[key] === 0) &&
    counts.nullReplies === counts.expectedNull;
  process.stdout.write(
    `fuzz: lines sent ${counts.sent}, replies ${counts.replies} (id null ${counts.nullReplies}/${counts.expectedNull} expected), server messages ${counts.serverMessages}, posts ${remote.posts()}; ` +
      `crashes ${counts.crashes}, hangs ${counts.hangs}, non-JSON stdout lines ${counts.nonJson}, non-JSON-RPC lines ${counts.notJsonRpc}, missing ${counts.missing}, duplicates ${counts.duplicates}, unexpected ${counts.unexpected}, error logs ${counts.errorLogs}; seed ${SEED}, ${seconds} s\n`,
  );
  process.exitCode = clean ? 0 : 1;
}

await main();
