// The command line's entry: runs the program's commands with the environment, signals and exit codes. Only cli/ reads the environment and argv and sets the exit code.

import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { CommanderError } from 'commander';
import { runBridge, type BridgeExit } from '../bridge.js';
import { createConfig, PROXY_VARIABLES, SHELL_REQUEST_TIMEOUT_MS, type BridgeConfig, type RawOptions } from '../config/config.js';
import { FileTooLargeError } from '../config/option-files.js';
import { createLogger, LogFileError, type BridgeLog } from '../logging/logger.js';
import { EXIT } from './exit-codes.js';
import { buildProgram, commandLineMistake, helpTopicMistake, usage, type CliOptions } from './program.js';
import { CLEAR_LINE } from '../shell/progress.js';
import type { ShellCommand } from '../shell/commands.js';
import { SHELL_COMMANDS } from '../shell/command-line.js';
import { toFailureJson } from '../shell/failure-json.js';
import { createRedactor, maskUrl, type Redactor } from '../logging/redactor.js';
import { toTerminalLine, toTerminalText } from '../core/terminal-text.js';
import { UsageError } from '../core/errors.js';
import { proxyFor, redactUserinfo } from '../http/dispatcher.js';

/** SIGTERM/SIGINT/SIGHUP end the process within a second: a client that sent one waits for the exit. */
const SIGNAL_EXIT_DEADLINE_MS = 900;
/** A shell command interrupted by Ctrl-C has this long to tell the server (a cancellation, a DELETE) before it exits anyway. */
const CANCEL_EXIT_DEADLINE_MS = 3_000;

// The bundle runs from dist/, this source from src/cli/: the package's package.json is one folder
// above the first and two above the second; the nearer one that is ours wins.
const PACKAGE_JSON_PATHS = ['../package.json', '../../package.json'];

function packageVersion(): string {
  for (const path of PACKAGE_JSON_PATHS) {
    let text: string;
    try {
      text = readFileSync(new URL(path, import.meta.url), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const parsed = JSON.parse(text) as { name?: string; version: string };
    if (parsed.name === 'fenbs-mcp') return parsed.version;
  }
  throw new Error('fenbs-mcp: package.json not found beside the code');
}

/**
 * Reads a file as UTF-8, but never more than `maxBytes`: the size is checked before reading, and
 * the read stops one byte past the limit (a file whose size is not known, such as a FIFO).
 */
function readBoundedTextFile(path: string, maxBytes: number): string {
  const fd = openSync(path, 'r');
  try {
    if (fstatSync(fd).size > maxBytes) throw new FileTooLargeError(path, maxBytes);
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length < buffer.length; length += read) read = readSync(fd, buffer, length, buffer.length - length, null);
    if (length > maxBytes) throw new FileTooLargeError(path, maxBytes);
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}

/** A query parameter or header whose name says its value is a credential (`api_key`, `X-Auth-Token`). */
const CREDENTIAL_NAME = /key|token|secret|pass|auth|sig|session|credential/i;

/**
 * The redactor for everything this run writes: the token, the password of every proxy the
 * environment names (OAuth requests go to other hosts than --url, so NO_PROXY may send them
 * through a proxy --url bypasses), and the values of --url query parameters and -H headers named
 * like credentials, which a server may echo back.
 */
function redactorFor(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>): Redactor {
  const named = [...config.url.searchParams, ...config.extraHeaders].filter(([name]) => CREDENTIAL_NAME.test(name)).map(([, value]) => value);
  return createRedactor([
    config.token,
    ...PROXY_VARIABLES.map((name) => proxyPassword(env[name])),
    ...named,
    ...config.headerSecrets.map((secret) => secret.value),
    // The key's PEM text too: an OpenSSL error could quote it, and it must never reach a log.
    config.clientCertificate?.passphrase,
    config.clientCertificate?.key,
  ]);
}

interface Prepared {
  config: BridgeConfig;
  env: Readonly<Record<string, string | undefined>>;
  demo: { url: URL; close(): Promise<void> } | undefined;
}

/** The logger of a subcommand; a --log-file that cannot be opened stops the demo and is a usage exit (a number). */
async function openLog(prepared: Prepared, redact: Redactor, refuse: (message: string) => number): Promise<BridgeLog | number> {
  try {
    return createLogger({
      level: prepared.config.logLevel,
      file: prepared.config.logFile,
      redact,
      stderrFd: logFd,
      formatStderr: await stderrFormatter(prepared.config),
    });
  } catch (error) {
    await prepared.demo?.close();
    if (error instanceof LogFileError) return refuse(error.message);
    throw error;
  }
}

/** Options + environment → config, starting the demo server first when asked. A number is a usage exit. */
async function prepare(options: CliOptions, report: (message: string, fix?: string) => number = usage): Promise<Prepared | number> {
  const env = process.env;
  if (options.demo !== true) {
    try {
      return { config: createConfig({ options, env, readTextFile: readBoundedTextFile, nodeVersion: process.version }), env, demo: undefined };
    } catch (error) {
      if (error instanceof UsageError) return report(error.message, error.fix);
      throw error;
    }
  }
  if (options.url !== undefined) return report('--demo and --url cannot be combined', 'fenbs-mcp --demo');
  // A throwaway token, so the demo shows the Authorization path without touching a real one.
  const { randomBytes } = await import('node:crypto');
  const demoToken = randomBytes(16).toString('hex');
  const { startDemoServer } = await import('../demo/demo-server.js');
  const demo = await startDemoServer({ token: demoToken });
  const raw: RawOptions = { ...options, url: demo.url.href, tokenEnv: 'FENBS_MCP_DEMO_TOKEN', tokenFile: undefined, tokenCommand: undefined };
  try {
    return { config: createConfig({ options: raw, env: { ...env, FENBS_MCP_DEMO_TOKEN: demoToken }, readTextFile: () => '' }), env, demo };
  } catch (error) {
    await demo.close();
    if (error instanceof UsageError) return report(error.message, error.fix);
    throw error;
  }
}

/** Where the commands' loggers write "stderr": fd 2, unless a caller of main names another. */
let logFd = 2;

/** Runs the CLI; resolves with the exit code. `world.logFd` sends the log lines meant for stderr to another descriptor (in-process tests). */
export async function main(argv: readonly string[], world: { logFd?: number } = {}): Promise<number> {
  logFd = world.logFd ?? 2;
  const mistakenTopic = helpTopicMistake(argv.slice(2));
  if (mistakenTopic !== undefined) return mistakenTopic;
  const version = packageVersion();
  const { program, result } = buildProgram(version, argv.slice(2), {
    bridge: (options) => bridgeCommand(options, version),
    doctor: (options) => doctorCommand(options),
    shell: (command, options) => shellCommand(command, options, version),
    account: (command, options) => accountCommand(command, options),
  });
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.OK; // --help, --version
      // `doctor --json` promises one JSON object on stdout, a mistake on its command line included.
      const [command] = argv.slice(2).filter((arg) => !arg.startsWith('-'));
      const json = argv.includes('--json');
      return commandLineMistake(
        error,
        program.args,
        json && command === 'doctor' ? doctorJsonUsage : json && SHELL_COMMAND_NAMES.has(command ?? '') ? shellJsonUsage : usage,
      );
    }
    throw error;
  }
  return result();
}

/** With `doctor --json` a script reads stdout: a usage mistake is a JSON report there too, and on stderr as always. */
function doctorJsonUsage(message: string, fix?: string): number {
  process.stdout.write(`${JSON.stringify({ ok: false, usage: { message, ...(fix === undefined ? {} : { fix }) }, checks: [] })}\n`);
  return usage(message, fix);
}

const SHELL_COMMAND_NAMES: ReadonlySet<string> = new Set(SHELL_COMMANDS);

/** With `tools --json` (and every shell command's) a script reads stdout: a usage mistake is one JSON object there too. */
function shellJsonUsage(message: string, fix?: string): number {
  process.stdout.write(`${toFailureJson({ code: 'USAGE', message, hint: fix === undefined ? undefined : `try: ${fix}` })}\n`);
  return usage(message, fix);
}

async function doctorCommand(options: CliOptions): Promise<number> {
  const report = options.json === true ? doctorJsonUsage : usage;
  const prepared = await prepare(options, report);
  if (typeof prepared === 'number') return prepared;
  const { reportDoctor } = await import('../doctor/report.js');
  const redact = redactorFor(prepared.config, prepared.env);
  const log = await openLog(prepared, redact, (message) => report(message, 'fenbs-mcp doctor --log-file ~/fenbs-mcp.log (a path you can write to)'));
  if (typeof log === 'number') return log;
  try {
    // Each check shows as it starts (a spinner on a terminal); what doctor prints is what users
    // paste into issues, so it goes through the same masking as the bridge's logs.
    const result = await reportDoctor(prepared.config, prepared.env, {
      stdout: process.stdout,
      stderr: process.stderr,
      json: options.json === true,
      redact,
      log: log.logger,
    });
    return result.ok ? EXIT.OK : EXIT.DOCTOR_FAILED;
  } finally {
    await log.close();
    await prepared.demo?.close();
  }
}

async function accountCommand(command: 'login' | 'logout', options: CliOptions): Promise<number> {
  const prepared = await prepare(options);
  if (typeof prepared === 'number') return prepared;
  const redact = redactorFor(prepared.config, prepared.env);
  const log = await openLog(prepared, redact, (message) => usage(message));
  if (typeof log === 'number') return log;
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const { runAccountCommand } = await import('./account-commands.js');
    // What login and logout print quotes the authorization server (an error_description): masked, then escaped.
    const outcome = await runAccountCommand(command, {
      config: prepared.config,
      env: prepared.env,
      logger: log.logger,
      redact,
      writeStderr: (text) => process.stderr.write(toTerminalText(redact(text))),
      signal: controller.signal,
    });
    if (controller.signal.aborted) return EXIT.INTERRUPTED;
    return outcome === 'ok' ? EXIT.OK : outcome === 'unreachable' ? EXIT.UNREACHABLE : EXIT.FAILURE;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await log.close();
    await prepared.demo?.close();
  }
}

async function bridgeCommand(options: CliOptions, version: string): Promise<number> {
  const prepared = await prepare(options);
  if (typeof prepared === 'number') return prepared;
  const { config, env, demo } = prepared;

  const redact = redactorFor(config, env);
  // The proxy the bridge's requests to --url take, by the dispatcher's own rule, named by its origin alone.
  const proxy = proxyFor(config.url, env);
  let log: BridgeLog;
  try {
    log = createLogger({ level: config.logLevel, file: config.logFile, redact, stderrFd: logFd, formatStderr: await stderrFormatter(config) });
  } catch (error) {
    await demo?.close();
    if (error instanceof LogFileError) return usage(error.message, 'fenbs-mcp --log-file ~/fenbs-mcp.log (a path you can write to)');
    throw error;
  }
  const { logger } = log;

  logger.info(
    {
      url: maskUrl(config.url),
      version,
      node: process.versions.node,
      // The demo's token is the demo's own: naming the variable it travels in only puzzles a newcomer.
      credentials:
        demo !== undefined
          ? "the embedded demo server's own token"
          : config.credential.kind === 'none'
            ? 'OAuth sign-in if the server asks for it'
            : config.credential.kind === 'command'
              ? 'token from --token-command'
              : config.token === undefined
                ? config.credential.source
                : `token from ${config.tokenSource}`,
      proxy: proxy === undefined ? undefined : redactUserinfo(proxy),
      demo: demo !== undefined || undefined,
    },
    'fenbs-mcp started',
  );
  if (config.credential.kind === 'none') {
    // A warning still: most often a token was meant to be set. A server that wants OAuth says so
    // with its 401, and the sign-in starts then.
    logger.warn(
      `no token: ${config.tokenSource} is not set, so requests go without Authorization until the server asks for an OAuth sign-in (a cached OAuth token is used if there is one)`,
    );
  }
  if (config.url.protocol === 'http:' && config.allowHttp) {
    logger.warn('--allow-http: the token travels unencrypted over plain http://');
  }
  if (process.stdin.isTTY === true) {
    // A person typing: say what the bridge expects, once.
    logger.info(
      'reading JSON-RPC messages from the terminal: one message per line, Ctrl-D to end (Ctrl-C to stop); a pasted multi-line JSON message is read as one',
    );
  }

  const controller = new AbortController();
  // Ctrl-C exits 130 as shells expect; SIGTERM and SIGHUP are how desktop hosts stop a server
  // they are done with, which is no failure: 0.
  let stopCode: number = EXIT.OK;
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'stopping');
    stopCode = signal === 'SIGINT' ? EXIT.INTERRUPTED : EXIT.OK;
    controller.abort();
    // Whatever is still running, the process is gone within a second.
    setTimeout(() => process.exit(stopCode), SIGNAL_EXIT_DEADLINE_MS).unref();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  process.once('SIGHUP', onSignal);

  let exit: BridgeExit;
  try {
    exit = await runBridge({
      input: process.stdin,
      output: process.stdout,
      terminalInput: process.stdin.isTTY === true,
      config,
      logger,
      redact,
      env,
      signal: controller.signal,
      // Through the logger (bounded, never blocks on a stderr nobody reads), masked like every line;
      // a log line per line of text, since a readable log line shows a line break as an escape.
      writeStderr: (text) => {
        for (const line of text.split('\n')) if (line.trim() !== '') logger.warn(line.trim());
      },
    });
  } catch (error) {
    // A credential that refuses how it was configured (--token-store keychain with no store) is a usage mistake.
    if (error instanceof UsageError) {
      await log.close();
      return usage(error.message, error.fix);
    }
    throw error;
  } finally {
    await demo?.close();
  }
  logger.debug({ exit }, 'stopped');
  await log.close();
  if (exit === 'input-failed') return EXIT.FAILURE;
  return exit === 'signal' ? stopCode : EXIT.OK;
}

/** tools, call, resources, read, prompts, prompt: one MCP exchange through an in-process bridge, printed for people or scripts. */
async function shellCommand(command: ShellCommand, options: CliOptions, version: string): Promise<number> {
  // With --json a script reads stdout: a failure before the command runs is one JSON object there too.
  const report = options.json === true ? shellJsonUsage : usage;
  // A person or a script reads stderr here, not a desktop host: readable lines unless told otherwise;
  // and a person is waiting, so a request's deadline is a shell's, not a desktop session's.
  const prepared = await prepare(
    { ...options, logFormat: options.logFormat ?? 'pretty', requestTimeout: options.requestTimeout ?? String(SHELL_REQUEST_TIMEOUT_MS) },
    report,
  );
  if (typeof prepared === 'number') return prepared;
  const { config, env, demo } = prepared;
  const redact = redactorFor(config, env);
  const format = await stderrFormatter(config);
  // On a terminal a log line first erases the progress bar it would run into; the next report redraws the bar.
  const formatStderr = process.stderr.isTTY === true ? (line: string) => `${CLEAR_LINE}${format === undefined ? line : format(line)}` : format;
  let log: BridgeLog;
  try {
    log = createLogger({ level: config.logLevel, file: config.logFile, redact, stderrFd: logFd, formatStderr });
  } catch (error) {
    await demo?.close();
    if (error instanceof LogFileError) return report(error.message, 'fenbs-mcp tools --log-file ~/fenbs-mcp.log (a path you can write to)');
    throw error;
  }
  const { logger } = log;
  // A shell command reports its own failure in one sentence; the bridge's own warnings and errors
  // (a failed --token-command, a refused request) would say it twice, since every failure also
  // reaches the command as the answer to its request, so they show only when a log level was asked
  // for. Warnings about the user's settings come to the command itself (BridgeOptions.warn).
  const bridgeLogger = options.logLevel === undefined && env.FENBS_MCP_LOG_LEVEL === undefined ? logger.child({}, { level: 'fatal' }) : logger;
  // Ctrl-C cancels the request in flight and exits 130; a second Ctrl-C ends the process at once.
  const interrupt = new AbortController();
  const onSigint = () => {
    interrupt.abort();
    setTimeout(() => process.exit(EXIT.INTERRUPTED), CANCEL_EXIT_DEADLINE_MS).unref();
  };
  process.once('SIGINT', onSigint);
  const { runShellCommand } = await import('../shell/commands.js');
  const { readAll, MAX_STDIN_ARGS_BYTES } = await import('../shell/arguments.js');
  try {
    return await runShellCommand(
      command,
      {
        config,
        logger: bridgeLogger,
        progressLogger: logger,
        redact,
        env,
        clientInfo: { name: 'fenbs-mcp', version },
        onServerLog: (level, data) => logger.info({ serverLevel: level, data }, 'server log'),
      },
      {
        stdout: process.stdout,
        stderr: process.stderr,
        readStdin: () => readAll(process.stdin, MAX_STDIN_ARGS_BYTES),
        json: options.json === true,
        interrupt: interrupt.signal,
      },
    );
  } finally {
    process.off('SIGINT', onSigint);
    await log.close();
    await demo?.close();
  }
}

/**
 * Readable lines (time, level, message, fields on the same line) when stderr is a terminal or
 * --log-format pretty says so; JSON otherwise, for desktop hosts and files. The formatter is
 * loaded only then, so the desktop path does not pay for it at start.
 */
async function stderrFormatter(config: BridgeConfig): Promise<((line: string) => string) | undefined> {
  const terminal = process.stderr.isTTY === true;
  if ((config.logFormat ?? (terminal ? 'pretty' : 'json')) === 'json') return undefined;
  // Every string of a readable line is escaped first, whether stderr is a terminal or a file that
  // will be shown on one later; colours only on a terminal.
  const { createPrettyFormatter } = await import('../logging/pretty-log.js');
  return createPrettyFormatter(terminal);
}

function proxyPassword(proxy: string | undefined): string | undefined {
  if (proxy === undefined || proxy === '') return undefined;
  try {
    const password = new URL(proxy).password;
    return password === '' ? undefined : decodeURIComponent(password);
  } catch {
    return undefined;
  }
}

/** Entry point for bin/: runs main and ends the process with its code once stdout is flushed. */
export function run(): void {
  // A reader of stdout that goes away early (`fenbs-mcp --help | head -1`) is no failure: the write's
  // EPIPE would otherwise be thrown as an uncaught error with a stack trace. What could not be read
  // is simply not read; the bridge's own writer also watches stdout and stops the bridge.
  process.stdout.on('error', () => undefined);
  main(process.argv).then(
    (code) => exitAfterFlush(code),
    (error: unknown) => {
      process.stderr.write(`fenbs-mcp: unexpected failure: ${toTerminalLine(error instanceof Error ? error.message : String(error))}\n`);
      exitAfterFlush(EXIT.FAILURE);
    },
  );
}

function exitAfterFlush(code: number): void {
  // Handles such as stdin keep the loop alive after a signal; stdout is flushed first.
  if (process.stdout.writableLength === 0 || process.stdout.destroyed) process.exit(code);
  process.stdout.write('', () => process.exit(code));
}
