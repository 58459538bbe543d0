// The least bridge undici allows, the bench's floor: stdin lines POSTed with dispatch() and a handler, each JSON body or each event's data: line written as one line.
//
// Not a product: no checks, no errors as JSON-RPC, the session header only. It is built by scripts/build.js's
// buildBundle (bench/least-bridge-build.js) and started by a copy of bin/fenbs-mcp.js, so that its start differs
// from fenbs-mcp's only in what the bundle does before the first answer.
import { Agent } from '../src/http/undici-parts.js';

// The bridge's own pool size (src/http/dispatcher.ts's MAX_CONNECTIONS), so that the agent is made alike.
const CONNECTIONS = 128;
const NEWLINE = '\n';
const EVENT_STREAM = 'text/event-stream';
const DATA_FIELD = 'data: ';
// Sent after the first answer, as a client of the 2025-06-18 era does (the bench server checks it).
const PROTOCOL_VERSION = '2025-06-18';

/** Started by bin/'s loader, as fenbs-mcp's src/cli/main.ts is: `--url <endpoint>`, other options ignored. */
export function run(): void {
  const url = new URL(process.argv[process.argv.indexOf('--url') + 1] ?? '');
  const agent = new Agent({ connections: CONNECTIONS });
  const headers: Record<string, string> = {
    authorization: `Bearer ${process.env.FENBS_TOKEN ?? ''}`,
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
  };
  let pending = '';
  process.stdin.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString('utf8')).split(NEWLINE);
    pending = lines.pop() ?? '';
    for (const line of lines) if (line !== '') post(line);
  });
  process.stdin.on('end', () => {
    agent.close().catch(() => {});
  });

  function post(body: string): void {
    const chunks: Buffer[] = [];
    // For an event stream: each event's `data:` line is written as it arrives, nothing parsed.
    let stream = false;
    let rest = '';
    agent.dispatch(
      { origin: url.origin, method: 'POST', path: url.pathname, headers, body },
      {
        onRequestStart() {},
        onResponseStart(_controller, _status, responseHeaders) {
          // The session the server opened with its answer to initialize goes with every later request.
          const session = responseHeaders['mcp-session-id'];
          if (typeof session === 'string' && headers['mcp-session-id'] === undefined) {
            headers['mcp-session-id'] = session;
            headers['mcp-protocol-version'] = PROTOCOL_VERSION;
          }
          const type = responseHeaders['content-type'];
          stream = typeof type === 'string' && type.startsWith(EVENT_STREAM);
        },
        onResponseData(_controller, chunk) {
          if (!stream) {
            chunks.push(chunk);
            return;
          }
          const lines = (rest + chunk.toString('utf8')).split(NEWLINE);
          rest = lines.pop() ?? '';
          for (const line of lines) if (line.startsWith(DATA_FIELD)) process.stdout.write(`${line.slice(DATA_FIELD.length)}${NEWLINE}`);
        },
        onResponseEnd() {
          if (stream) return;
          // A 202 (a notification's answer) has no body and earns no line.
          const text = Buffer.concat(chunks).toString('utf8').trim();
          if (text !== '') process.stdout.write(`${text}${NEWLINE}`);
        },
        onResponseError(_controller, error) {
          process.stderr.write(`${String(error)}${NEWLINE}`);
        },
      },
    );
  }
}
