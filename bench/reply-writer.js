// The stdio hop of a large reply alone: writes a tool-result line of the asked size to stdout, one way.
//
// Each stdin line is `{"id":N,"prepare":B}` (build the B-byte reply now, answer `{"id":N}`) or
// `{"id":N,"bytes":B}` (write the reply line: a tools/call result whose text is B bytes of 'x', or
// 'ok' for 0). A prepared reply is written from the buffer built for it; nothing is copied per call.
import { createInterface } from 'node:readline';

const TAIL = '"}],"isError":false}}\n';
// The text and the end of the line for each size, built once.
const bodies = new Map();

function toBody(bytes) {
  let body = bodies.get(bytes);
  if (body === undefined) {
    if (bytes === 0) {
      body = Buffer.from(`ok${TAIL}`);
    } else {
      body = Buffer.allocUnsafe(bytes + TAIL.length);
      body.fill('x', 0, bytes);
      body.write(TAIL, bytes);
    }
    bodies.set(bytes, body);
  }
  return body;
}

async function write(chunk) {
  if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const { id, prepare, bytes } = JSON.parse(line);
  if (prepare !== undefined) {
    toBody(prepare);
    await write(`{"id":${JSON.stringify(id)}}\n`);
    continue;
  }
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`;
  process.stdout.cork();
  process.stdout.write(head);
  const drained = process.stdout.write(toBody(bytes));
  process.stdout.uncork();
  if (!drained) await new Promise((resolve) => process.stdout.once('drain', resolve));
}
