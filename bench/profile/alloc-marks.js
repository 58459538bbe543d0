// Preload (`node --import`) for a bridge driven by seq-driver.js: a sampling heap profile of every
// allocation, garbage included, from ALLOC_DELAY_MS (default 2000) after start to stdin's end, written to
// $ALLOC_OUT with the number of stdout writes in that span beside it ($ALLOC_OUT.count; one per reply
// when calls are sequential). Read it with alloc-summary.js.
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';

const session = new inspector.Session();
session.connect();
let counting = false;
let writes = 0;
const { _write: write, _writev: writev } = process.stdout;
process.stdout._write = function (...args) {
  if (counting) writes++;
  return write.apply(this, args);
};
process.stdout._writev = function (...args) {
  if (counting) writes++;
  return writev.apply(this, args);
};
setTimeout(
  () => {
    // Every allocation is sampled about once per KiB, whether the object lives or dies young.
    const options = { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
    session.post('HeapProfiler.startSampling', options, (error) => {
      if (error) process.stderr.write(`alloc-marks: ${error.message}\n`);
      else counting = true;
    });
  },
  Number(process.env.ALLOC_DELAY_MS ?? 2000),
).unref();
let stopped = false;
const stop = () => {
  if (stopped || !counting) return;
  stopped = true;
  // An in-process session answers synchronously, so this also works from 'exit'.
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) return void process.stderr.write(`alloc-marks: ${error.message}\n`);
    writeFileSync(process.env.ALLOC_OUT, JSON.stringify(result.profile));
    writeFileSync(`${process.env.ALLOC_OUT}.count`, String(writes));
  });
};
process.stdin.on('end', stop);
process.on('exit', stop);
