// The undici in-process subject in a process of its own, driven by one JSON command per stdin line.
//
// Usage: node bench/undici-child.js <origin> <path> [--ask-progress]
// Each line `{"id":N,"op":"…",…}` gets one stdout line `{"id":N,"result":…}` or `{"id":N,"error":"…"}`.
// The phases are timed here, on the in-process pool, so the command pipe is in no figure; the
// parent reads this process's CPU and memory from /proc, as it does for the bridge.
import { createInterface } from 'node:readline';
import { UndiciSubject } from './subjects.js';

const [origin, path, flag] = process.argv.slice(2);
if (origin === undefined || path === undefined || (flag !== undefined && flag !== '--ask-progress')) {
  process.stderr.write('usage: node bench/undici-child.js <origin> <path> [--ask-progress]\n');
  process.exit(2);
}
const subject = new UndiciSubject({ origin, path, askProgress: flag === '--ask-progress' });

// The answer to one command; the timed calls are the TimedSubject methods the parent uses for the bridge.
function run(command) {
  switch (command.op) {
    case 'initialize':
      return subject.initialize().then(() => true);
    case 'timeSequential':
      return subject.timeSequential(command.count).then((samples) => samples.map((micros) => Math.round(micros * 10) / 10));
    case 'timeInFlight':
      return subject.timeInFlight(command.total, command.inFlight);
    case 'timeCall':
      return subject.timeCall(command.bytes).then(({ elapsedMs }) => elapsedMs);
    case 'timePipelined':
      return subject.timePipelined(command.count);
    default:
      return Promise.reject(new Error(`unknown op ${JSON.stringify(command.op)}`));
  }
}

// One command at a time, as the parent sends them; stdin EOF closes the pool and ends the process.
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const command = JSON.parse(line);
  let answer;
  try {
    answer = { id: command.id, result: await run(command) };
  } catch (error) {
    answer = { id: command.id, error: error instanceof Error ? error.message : String(error) };
  }
  if (!process.stdout.write(`${JSON.stringify(answer)}\n`)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}
await subject.close();
