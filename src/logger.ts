// pino on stderr (and optionally a file), with credentials redacted at every level.

import { pino, type Logger, type LevelWithSilent } from 'pino';
import type { Redactor } from './secrets.js';

export type { Logger };

export const LOG_LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface LoggerOptions {
  level: LevelWithSilent;
  /** Also write the same lines to this file (appended). */
  file?: string | undefined;
  redact: Redactor;
}

/**
 * Stdout carries protocol only (stdio transport: "MUST NOT write anything to its stdout that is
 * not a valid MCP message"), so pino writes to fd 2, never its default fd 1.
 *
 * Two layers keep tokens out: path redaction for header fields that hold credentials, and a
 * final pass over every serialised line that masks the known secret values wherever they hide
 * (an error message, a body excerpt, a URL).
 */
export function createLogger(options: LoggerOptions): Logger {
  const stderr = pino.destination({ dest: 2, sync: true });
  const destination =
    options.file === undefined
      ? stderr
      : pino.multistream([
          { level: 'trace', stream: stderr },
          { level: 'trace', stream: pino.destination({ dest: options.file, sync: true, append: true, mkdir: true }) },
        ]);
  return pino(
    {
      level: options.level,
      base: { name: 'fenbs-mcp' },
      redact: {
        paths: [
          'token',
          'headers.authorization',
          'headers.Authorization',
          'headers["proxy-authorization"]',
          'headers.cookie',
          'headers["set-cookie"]',
          '*.headers.authorization',
          '*.headers.Authorization',
        ],
        censor: '[REDACTED]',
      },
      hooks: { streamWrite: options.redact },
    },
    destination,
  );
}
