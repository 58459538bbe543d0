// Preload (`node --import`) for a bridge driven by segments.js: the monotonic time of each stdin chunk,
// of undici's request created, headers sent, response headers and response end, and of each stdout
// write, saved to $MARKS_OUT as JSON when the process exits.
import diagnosticsChannel from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';

const now = () => Number(process.hrtime.bigint());
const marks = { stdin: [], create: [], send: [], headers: [], trailers: [], out: [] };
const channels = { create: 'undici:request:create', send: 'undici:client:sendHeaders', headers: 'undici:request:headers', trailers: 'undici:request:trailers' };
for (const [key, name] of Object.entries(channels)) diagnosticsChannel.subscribe(name, () => marks[key].push(now()));
// Wrapped, not listened to: a 'data' listener would switch stdin to flowing mode under the bridge.
const push = process.stdin.push;
process.stdin.push = function (chunk, encoding) {
  if (chunk !== null) marks.stdin.push(now());
  return push.call(this, chunk, encoding);
};
const { _write: write, _writev: writev } = process.stdout;
process.stdout._write = function (...args) {
  marks.out.push(now());
  return write.apply(this, args);
};
process.stdout._writev = function (...args) {
  marks.out.push(now());
  return writev.apply(this, args);
};
process.on('exit', () => writeFileSync(process.env.MARKS_OUT, JSON.stringify(marks)));
