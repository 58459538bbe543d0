// The least a stdio-to-HTTP bridge can do, for comparison: `node bench/run.js --bridge bench/profile/minimal-bridge.js`.
// Not a product: no checks, no deadlines, no logging, 2025-06-18 session headers only.
// What it does:
// one undici Pool, dispatch() with a handler, no checks, no deadlines, no logging. Each stdin line is
// POSTed as it is; a JSON reply is written as one line, an event stream's data events one line each.
import { Pool } from 'undici';
const url = new URL(process.argv[process.argv.indexOf('--url') + 1]);
const pool = new Pool(url.origin, { connections: 64 });
const headers = { authorization: `Bearer ${process.env.FENBS_TOKEN}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
let pending = '';
process.stdin.on('data', (chunk) => {
  const text = pending + chunk.toString('utf8');
  const lines = text.split('\n');
  pending = lines.pop();
  for (const line of lines) if (line !== '') post(line);
});
process.stdin.on('end', () => pool.close());
function post(body) {
  const chunks = [];
  let type = '';
  pool.dispatch(
    { method: 'POST', path: url.pathname, headers, body },
    {
      onRequestStart() {},
      onResponseStart(_controller, status, responseHeaders) {
        type = String(responseHeaders['content-type'] ?? '');
        const session = responseHeaders['mcp-session-id'];
        if (session !== undefined) {
          headers['mcp-session-id'] = session;
          headers['mcp-protocol-version'] = '2025-06-18';
        }
      },
      onResponseData(_controller, chunk) {
        chunks.push(chunk);
      },
      onResponseEnd() {
        const text = Buffer.concat(chunks).toString('utf8');
        if (text === '') return;
        if (type.startsWith('text/event-stream')) {
          for (const event of text.split('\n\n')) {
            const data = event
              .split('\n')
              .filter((l) => l.startsWith('data:'))
              .map((l) => l.slice(5).trimStart())
              .join('\n');
            if (data !== '') process.stdout.write(`${data}\n`);
          }
        } else process.stdout.write(`${JSON.stringify(JSON.parse(text))}\n`);
      },
      onResponseError(_controller, error) {
        process.stderr.write(`${error.message}\n`);
      },
    },
  );
}
