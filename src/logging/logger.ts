// pino on stderr (and optionally a file) through bounded asynchronous writers, with credentials redacted.

import { openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino, type Logger, type LevelWithSilent, type LoggerOptions as LoggerOptionsOfPino } from 'pino';
import { SonicBoom } from 'sonic-boom';
import type { Redactor } from './redactor.js';
import { LongId, MAX_LOGGED_ID_CHARS } from '../core/json-rpc.js';
import { excerptOf, type Mask } from './outgoing-text.js';

export type { Logger };

export const LOG_LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Log bytes waiting for each destination. A client may never read stderr (its pipe holds 64 KB);
 * past this bound lines are dropped, never waited for, and a line says how many once the
 * destination takes bytes again.
 */
export const MAX_LOG_BUFFER_BYTES = 1024 * 1024;
/** How long the last log lines may take to leave at exit; a reader that never reads gets no longer. */
export const LOG_FLUSH_GRACE_MS = 500;
/**
 * A log file the bridge creates is readable by its owner only: the lines are redacted, but they
 * still name the server, its tools, session ids and excerpts of what it answered, which other
 * users of a shared machine have no business reading. An existing file keeps the mode its owner
 * gave it.
 */
const LOG_FILE_MODE = 0o600;

export interface LoggerOptions {
  level: LevelWithSilent;
  /** Also write the same lines to this file (appended). */
  file?: string | undefined;
  redact: Redactor;
  /** Where "stderr" is; 2 unless a test points it elsewhere. */
  stderrFd?: number;
  /** Turns each JSON line into what stderr shows (readable lines on a terminal); files keep JSON. */
  formatStderr?: ((line: string) => string) | undefined;
}

export interface BridgeLog {
  logger: Logger;
  /** Lets the buffered lines leave for at most LOG_FLUSH_GRACE_MS; never blocks on a reader that does not read. */
  close: () => Promise<void>;
}

/** `--log-file` cannot be opened: a usage mistake, reported before the bridge starts. */
export class LogFileError extends Error {
  override readonly name = 'LogFileError';
}

/**
 * One destination: an asynchronous SonicBoom (writes leave on libuv's thread pool, so a full pipe
 * never stops the event loop) bounded by MAX_LOG_BUFFER_BYTES, counting what it drops.
 */
class BoundedSink {
  readonly #stream: SonicBoom;
  #dropped = 0;
  #writingNotice = false;
  #noticeDropped = false;
  #closing = false;
  failed = false;

  constructor(fd: number, onFailure: (error: Error) => void) {
    this.#stream = new SonicBoom({ fd, sync: false, maxLength: MAX_LOG_BUFFER_BYTES });
    this.#stream.on('drop', () => {
      if (this.#writingNotice) this.#noticeDropped = true;
      else this.#dropped++;
    });
    // A write completed, so there is room again: say what was lost.
    this.#stream.on('write', () => this.#reportDrops());
    this.#stream.on('error', (error: Error) => {
      if (this.failed) return;
      this.failed = true;
      onFailure(error);
    });
  }

  write(line: string): void {
    // After close() the stream is ending: a late line (shutdown work still logging) is dropped.
    if (!this.failed && !this.#closing) this.#stream.write(line);
  }

  #reportDrops(): void {
    if (this.#dropped === 0 || this.failed) return;
    const count = this.#dropped;
    const notice = `${JSON.stringify({ level: 40, time: Date.now(), name: 'fenbs-mcp', dropped: count, msg: `${count} log line${count === 1 ? '' : 's'} dropped: the reader fell more than ${MAX_LOG_BUFFER_BYTES} bytes behind` })}\n`;
    this.#writingNotice = true;
    this.#noticeDropped = false;
    this.#stream.write(notice);
    this.#writingNotice = false;
    if (!this.#noticeDropped) this.#dropped -= count;
  }

  /** Resolves once the buffer has left, the destination failed, or `graceMs` passed. */
  close(graceMs: number): Promise<void> {
    if (this.failed || this.#closing) return Promise.resolve();
    this.#closing = true;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, graceMs);
      this.#stream.once('close', done);
      this.#stream.once('error', done);
      // end() writes what is buffered, then closes (fd 2 itself stays open).
      this.#stream.end();
    });
  }
}

// The file's folder must exist: a typo in the path (`~/lgos/x.log`) is refused with its name
// rather than leaving a tree of new folders behind, as a shell's `>` refuses it.
function openLogFile(file: string): number {
  const folder = dirname(file);
  let folderProblem: string | undefined;
  try {
    if (!statSync(folder).isDirectory()) folderProblem = `${folder} is not a folder`;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') folderProblem = `the folder ${folder} does not exist; create it first (mkdir -p ${folder})`;
    else if (code === 'ENOTDIR') folderProblem = `part of ${folder} is a file, not a folder`;
  }
  if (folderProblem !== undefined) throw new LogFileError(`cannot open --log-file ${file}: ${folderProblem}`);
  try {
    return openSync(file, 'a', LOG_FILE_MODE);
  } catch (error) {
    throw new LogFileError(`cannot open --log-file ${file}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Stdout carries protocol only (stdio transport: "MUST NOT write anything to its stdout that is
 * not a valid MCP message"), so pino writes to fd 2, never its default fd 1.
 *
 * Logging never blocks the bridge: each destination is asynchronous and bounded (see
 * BoundedSink). A log file that fails mid-run (a full disk) is reported once on stderr and
 * dropped; the bridge goes on.
 *
 * Two layers keep tokens out: path redaction for header fields that hold credentials, and a
 * final pass over every serialised line that masks the known secret values wherever they hide
 * (an error message, a body excerpt, a URL).
 *
 * Throws LogFileError when `file` cannot be opened.
 */
export function createLogger(options: LoggerOptions): BridgeLog {
  const fileFd = options.file === undefined ? undefined : openLogFile(options.file);
  const stderr = new BoundedSink(options.stderrFd ?? 2, () => undefined); // no reader left to tell
  const file =
    fileFd === undefined
      ? undefined
      : new BoundedSink(fileFd, (error) => {
          const code = (error as NodeJS.ErrnoException).code ?? error.message;
          logger.warn({ file: options.file, code }, `cannot write --log-file ${options.file ?? ''} (${code}): logging to stderr only from now on`);
        });
  const { formatStderr } = options;
  const logger = pino(loggerOptions(options.level, options.redact), {
    write(line: string) {
      stderr.write(formatStderr === undefined ? line : formatStderr(line));
      file?.write(line);
    },
  });
  return {
    logger,
    close: async () => {
      // The file first: a failure it reports at its last write still reaches stderr.
      await file?.close(LOG_FLUSH_GRACE_MS);
      await stderr.close(LOG_FLUSH_GRACE_MS);
    },
  };
}

/**
 * The options of the run's pino logger, for every logger of a run (and a test's in-process
 * bridge): credential paths censored, every line masked, a long id masked before it is cut.
 */
export function loggerOptions(level: string, redact: Redactor): LoggerOptionsOfPino {
  return {
    level,
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
    hooks: { streamWrite: redact },
    // A long id is masked whole, then cut: the one gate for outgoing text, applied before the
    // line is built, since the line's own pass sees only what is left after a cut.
    formatters: { log: (fields) => withLongIdsCut(fields, redact) },
  };
}

/** `fields` with every LongId value (toLoggedId) as its masked excerpt and its length. */
function withLongIdsCut(fields: Record<string, unknown>, mask: Mask): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    if (!(value instanceof LongId)) continue;
    out ??= { ...fields };
    out[key] = `${excerptOf(value.text, mask, MAX_LOGGED_ID_CHARS)} (${value.text.length} characters)`;
  }
  return out ?? fields;
}
