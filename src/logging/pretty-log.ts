// Readable log lines for a person on stderr: pino-pretty over a copy of each line whose every string is terminal-safe.

import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { toTerminalLine } from '../core/terminal-text.js';

/**
 * Escapes every string of a parsed log line, keys included: a log line copies in what a server
 * sent (an error message, a tool name, a whole `notifications/message` payload under `data`), and
 * pino-pretty prints the message as it is and the other fields through JSON.stringify, which leaves
 * C1 controls, line separators and bidi controls as they are (CWE-150).
 */
function revive(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return toTerminalLine(value);
  if (!isJsonObject(value) || Object.keys(value).every((key) => toTerminalLine(key) === key)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [toTerminalLine(key), field]));
}

/**
 * A JSON log line as an object whose every string passes toTerminalLine, for pino-pretty to
 * format; anything else (a line that is not a JSON object) as that line escaped, which pino-pretty
 * prints as it is.
 */
export function toTerminalLog(line: string): JsonObject | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line, revive);
  } catch {
    parsed = undefined;
  }
  return isJsonObject(parsed) ? parsed : toTerminalLine(line.replace(/\n$/, ''));
}

/**
 * The stderr formatter for `--log-format pretty` (and a terminal by default): time, level, message
 * and fields on one line, coloured when `colorize` (a terminal); the colours are the only escape
 * sequences it writes. pino-pretty is loaded only here, so the desktop path does not pay for it.
 */
export async function createPrettyFormatter(colorize: boolean): Promise<(line: string) => string> {
  const loaded = await import('pino-pretty');
  // A CommonJS module: its named export sits on `default` once bundled as ESM.
  const prettyFactory = (loaded as Partial<typeof loaded>).prettyFactory ?? loaded.default.prettyFactory;
  const format = prettyFactory({ colorize, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' });
  return (line) => format(toTerminalLog(line));
}
