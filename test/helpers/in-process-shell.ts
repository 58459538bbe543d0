// Runs a shell command (tools, call…) in this process through the in-process bridge, capturing what it prints.

import { readFileSync } from 'node:fs';
import { PassThrough, type Writable } from 'node:stream';
import { pino } from 'pino';
import { createConfig } from '../../src/config/config.js';
import { createRedactor } from '../../src/logging/redactor.js';
import { runShellCommand, type ShellCommand } from '../../src/shell/commands.js';
import { toRawOptions } from './in-process-bridge.js';

export interface ShellRun {
  code: number;
  stdout: string;
  /** What the command wrote to stderr itself (messages, the progress bar). */
  stderr: string;
  /** What went through the logger (progress lines without a terminal). */
  log: string;
}

export interface ShellRunOptions {
  env?: Record<string, string | undefined>;
  json?: boolean;
  /** Pretend stderr is a terminal of this many columns. */
  terminalColumns?: number;
  stdin?: string;
  /** Aborted as Ctrl-C would; `onStderr`/`onLog` see output as it comes, to decide when. */
  interrupt?: AbortController;
  onLog?: (log: string) => void;
  /** Where the command prints, instead of a collecting stream (then `stdout` of the run is empty). */
  stdout?: Writable;
  /** Receives the server's log notifications. */
  onServerLog?: (level: string, data: unknown) => void;
}

/** Runs `command` with the bridge options `args` (as the CLI spells them). */
export async function runShell(command: ShellCommand, args: string[], options: ShellRunOptions = {}): Promise<ShellRun> {
  const env = { FENBS_MCP_LOG_LEVEL: 'info', ...options.env };
  const config = createConfig({ options: toRawOptions(args), env, readTextFile: (path) => readFileSync(path, 'utf8') });
  const redact = createRedactor([config.token]);
  let log = '';
  const logStream = new PassThrough();
  logStream.setEncoding('utf8');
  logStream.on('data', (chunk: string) => {
    log += chunk;
    options.onLog?.(log);
  });
  const logger = pino({ level: config.logLevel, hooks: { streamWrite: redact } }, logStream);
  let stdout = '';
  const out = new PassThrough();
  out.setEncoding('utf8');
  out.on('data', (chunk: string) => (stdout += chunk));
  let stderr = '';
  const terminal = options.terminalColumns !== undefined;
  const err = {
    write: (text: string) => {
      stderr += text;
      return true;
    },
    isTTY: terminal,
    ...(terminal ? { columns: options.terminalColumns } : {}),
  };
  const code = await runShellCommand(
    command,
    {
      config,
      logger,
      redact,
      env,
      clientInfo: { name: 'fenbs-mcp-tests', version: '1.0.0' },
      ...(options.onServerLog === undefined ? {} : { onServerLog: options.onServerLog }),
    },
    {
      stdout: options.stdout ?? out,
      stderr: err,
      readStdin: () => Promise.resolve(options.stdin ?? ''),
      json: options.json === true,
      interrupt: (options.interrupt ?? new AbortController()).signal,
    },
  );
  return { code, stdout, stderr, log };
}
