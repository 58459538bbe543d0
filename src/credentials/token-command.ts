// --token-command: a shell command whose trimmed stdout is the bearer token, run at start and again after a 401.

import { spawn } from 'node:child_process';
import { bearerPrefixFix, tokenProblem } from '../core/http-field-grammar.js';
import type { Credential, CredentialChallenge } from '../core/credential.js';
import { BridgeError } from '../core/errors.js';
import type { Logger } from '../logging/logger.js';
import { createRedactor, MIN_MASKABLE_SECRET_CHARS, registerSecret, type Redactor } from '../logging/redactor.js';
import { headBeforeCut, terminalExcerptOf } from '../logging/outgoing-text.js';
import { untilAborted } from '../core/abort.js';

/** A password manager may wait for the user to unlock it; longer than this, the command is hung. */
export const TOKEN_COMMAND_TIMEOUT_MS = 60_000;
/** A token is a line; a command printing more than this is the wrong command, and is stopped. */
export const MAX_TOKEN_COMMAND_OUTPUT_BYTES = 64 * 1024;
/** How much of the command's stderr is kept, and how much of it an error shows. */
export const MAX_TOKEN_COMMAND_STDERR_BYTES = 16 * 1024;
export const TOKEN_COMMAND_STDERR_EXCERPT_CHARS = 300;
/**
 * Once the command has exited, how long its pipes may take to hand over what it wrote before: a
 * process it left behind (`sleep 60 &`) holds them open as long as it lives, and is not waited for.
 */
export const TOKEN_COMMAND_PIPE_GRACE_MS = 200;
/** How long the command's process group has after SIGTERM before what is left of it gets SIGKILL. */
export const TOKEN_COMMAND_KILL_GRACE_MS = 1_000;

const HINT = 'run the command in a terminal to see what it needs (a sign-in, an unlocked vault); it must print the token alone on stdout and exit 0';
/** The characters a token is made of (RFC 6750 §2.1 b64token), as runs inside other output (`{"token":"…"}`, `TOKEN=…`). */
const TOKEN_RUN = /[A-Za-z0-9\-._~+/]+=*/g;

/** POSIX: the command leads a process group of its own, so whatever it starts can be stopped with it. */
const GROUPS = process.platform !== 'win32';

/**
 * Process groups of token commands that may still have members, each with its SIGKILL timer once
 * SIGTERM was sent. A group still here when the bridge exits gets SIGKILL then: a detached group
 * outlives the process that started it.
 */
const liveGroups = new Map<number, NodeJS.Timeout | undefined>();

function signalGroup(group: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false; // ESRCH: no process is left in the group
  }
}

/* c8 ignore next 3 -- runs as the process exits, which only the spawned end-to-end suite sees */
function killLiveGroups(): void {
  for (const group of liveGroups.keys()) signalGroup(group, 'SIGKILL');
}

function trackGroup(group: number): void {
  if (liveGroups.size === 0) process.on('exit', killLiveGroups);
  liveGroups.set(group, undefined);
}

function releaseGroup(group: number): void {
  clearTimeout(liveGroups.get(group));
  liveGroups.delete(group);
  if (liveGroups.size === 0) process.off('exit', killLiveGroups);
}

/** Stops every process of the group: SIGTERM now, SIGKILL after TOKEN_COMMAND_KILL_GRACE_MS for what is left. Idempotent. */
function stopGroup(group: number): void {
  if (!liveGroups.has(group) || liveGroups.get(group) !== undefined) return;
  if (!signalGroup(group, 'SIGTERM')) {
    releaseGroup(group);
    return;
  }
  const timer = setTimeout(() => {
    signalGroup(group, 'SIGKILL');
    releaseGroup(group);
  }, TOKEN_COMMAND_KILL_GRACE_MS);
  // Never what keeps the bridge running; the exit hook sends SIGKILL if the bridge ends first.
  timer.unref();
  liveGroups.set(group, timer);
}

export interface TokenCommandOptions {
  env: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  maxOutputBytes?: number;
  /** Aborting it stops the command (the bridge is closing). */
  signal?: AbortSignal;
}

function failed(message: string, context: Record<string, unknown> = {}): BridgeError {
  return new BridgeError('TOKEN_COMMAND_FAILED', `--token-command ${message}`, { hint: HINT, ...context });
}

/**
 * Masks, in what is reported about a run, whatever the command printed on stdout: the whole of it,
 * each line, and each word and token-shaped run of MIN_MASKABLE_SECRET_CHARS or more, in every
 * spelling the redactor knows. A command that printed its token and then failed often repeats it
 * on stderr ("token … expired"). The pieces are bounded by MAX_TOKEN_COMMAND_OUTPUT_BYTES.
 */
function maskerFor(stdout: string): (text: string) => string {
  const whole = stdout.trim();
  if (whole === '') return (text) => text;
  const pieces = new Set([whole]);
  for (const line of whole.split(/[\r\n]+/)) pieces.add(line.trim());
  for (const word of whole.split(/\s+/)) if (word.length >= MIN_MASKABLE_SECRET_CHARS) pieces.add(word);
  for (const [run] of whole.matchAll(TOKEN_RUN)) if (run.length >= MIN_MASKABLE_SECRET_CHARS) pieces.add(run);
  return createRedactor([...pieces]);
}

/**
 * The start of what the command said on stderr, on one line, with what it printed on stdout masked
 * and every control character shown, not obeyed (it reaches logs, replies and doctor's terminal).
 */
function excerptOf(stderr: Buffer, cut: boolean, mask: (text: string) => string): string | undefined {
  let raw = stderr.toString('utf8');
  // Kept up to MAX_TOKEN_COMMAND_STDERR_BYTES: a token cut there would no longer match its mask.
  if (cut) raw = headBeforeCut(raw);
  // The one gate: masked before it is cut to length, so no part of a secret is left at the cut.
  const text = terminalExcerptOf(raw, mask, TOKEN_COMMAND_STDERR_EXCERPT_CHARS);
  return text === '' ? undefined : text;
}

/**
 * Runs `command` through the shell, with no stdin, and resolves with its trimmed stdout once it has
 * exited 0. Rejects with a TOKEN_COMMAND_FAILED BridgeError that names the exit code and the start
 * of stderr, and never the output: a command that fails, prints nothing, prints what a Bearer
 * header cannot carry, prints more than `maxOutputBytes`, or runs longer than `timeoutMs`. Its exit
 * is what counts: what it started and left running is stopped with its process group then, and its
 * pipes are not waited for past TOKEN_COMMAND_PIPE_GRACE_MS.
 */
export function runTokenCommand(command: string, options: TokenCommandOptions): Promise<string> {
  const timeoutMs = options.timeoutMs ?? TOKEN_COMMAND_TIMEOUT_MS;
  const maxOutputBytes = options.maxOutputBytes ?? MAX_TOKEN_COMMAND_OUTPUT_BYTES;
  if (options.signal?.aborted === true) return Promise.reject(failed('was stopped: the bridge is closing'));
  return new Promise<string>((resolve, reject) => {
    const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'], env: options.env, detached: GROUPS, windowsHide: true });
    const group = GROUPS ? child.pid : undefined;
    if (group !== undefined) trackGroup(group);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const stderr: Buffer[] = [];
    let stderrBytes = 0;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let grace: NodeJS.Timeout | undefined;
    let settled = false;

    /** The one place a run ends: its timers cleared, its pipes no longer read, its process group stopped. */
    const finish = (error: BridgeError | undefined, token?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      options.signal?.removeEventListener('abort', onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      if (group !== undefined) stopGroup(group);
      /* c8 ignore start -- Windows has no process groups, and a POSIX spawn that failed has no pid to kill; neither runs in the tests */
      else if (exit === undefined) child.kill('SIGTERM');
      /* c8 ignore stop */
      if (error === undefined) resolve(token!);
      else reject(error);
    };
    const onAbort = () => finish(failed('was stopped: the bridge is closing'));
    // The bridge keeps its own deadline: it answers when the timer fires, whatever the command does.
    const timer = setTimeout(() => finish(failed(`did not finish within ${timeoutMs} ms`, { timeoutMs })), timeoutMs);
    options.signal?.addEventListener('abort', onAbort, { once: true });

    /** What the run gave, once the command has exited and its pipes were read (or their grace is over). */
    const conclude = () => {
      if (exit === undefined || settled) return;
      const output = Buffer.concat(stdout).toString('utf8');
      // Made only for a failure: a good run's stderr is not reported.
      const excerpt = () => excerptOf(Buffer.concat(stderr), stderrBytes > MAX_TOKEN_COMMAND_STDERR_BYTES, maskerFor(output));
      if (exit.code !== 0) {
        const how = exit.code === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited with code ${exit.code}`;
        const stderrExcerpt = excerpt();
        finish(failed(`${how}${stderrExcerpt === undefined ? '' : `: ${stderrExcerpt}`}`, { exitCode: exit.code ?? undefined, stderr: stderrExcerpt }));
        return;
      }
      // The line end (LF, or CRLF from a Windows tool) and spacing around the token are the shape of
      // command output, never part of a token (RFC 6750 §2.1: a b64token holds no white space).
      const token = output.trim();
      if (token === '') {
        const stderrExcerpt = excerpt();
        finish(
          failed(`printed nothing on stdout (exit code 0)${stderrExcerpt === undefined ? '' : `; stderr: ${stderrExcerpt}`}`, {
            exitCode: 0,
            stderr: stderrExcerpt,
          }),
        );
        return;
      }
      // Sent as `Authorization: Bearer <token>`; refused here, never cached, and never repeated.
      const problem = tokenProblem(token);
      if (problem !== undefined) {
        finish(
          failed(`printed a token that contains ${problem}, so it cannot be sent in an Authorization header`, {
            exitCode: 0,
            hint: bearerPrefixFix(token) ?? HINT,
          }),
        );
        return;
      }
      finish(undefined, token);
    };

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxOutputBytes) finish(failed(`printed more than ${maxOutputBytes} bytes: a token is one line`, { maxOutputBytes }));
      else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderrBytes < MAX_TOKEN_COMMAND_STDERR_BYTES) stderr.push(chunk.subarray(0, MAX_TOKEN_COMMAND_STDERR_BYTES - stderrBytes));
      stderrBytes += chunk.length;
    });
    child.on('error', (error: NodeJS.ErrnoException) => finish(failed(`could not be started (${error.code ?? error.message})`)));
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Its exit is what counts: what it left running (a background job holding stdout open) is
      // stopped now, and the pipes get a short grace to deliver what is already in them.
      if (group !== undefined) stopGroup(group);
      grace = setTimeout(conclude, TOKEN_COMMAND_PIPE_GRACE_MS);
    });
    // Both pipes read to their end after the exit: nothing more can come.
    child.on('close', conclude);
  });
}

export interface TokenCommandDeps {
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  redact: Redactor;
  /** For tests: a shorter deadline than TOKEN_COMMAND_TIMEOUT_MS. */
  timeoutMs?: number;
}

/** The credential `--token-command` gives: the token it printed last, renewed by running it again. */
export class TokenCommandCredential implements Credential {
  readonly source = '--token-command';
  readonly #command: string;
  readonly #deps: TokenCommandDeps;
  readonly #closed = new AbortController();
  #authorization: string | undefined;
  #renewal: Promise<boolean> | undefined;
  /** Why the last run failed, while no later run succeeded; doctor shows it. */
  lastFailure: BridgeError | undefined;

  private constructor(command: string, deps: TokenCommandDeps) {
    this.#command = command;
    this.#deps = deps;
  }

  /**
   * Runs the command once before the first request. A failure is logged, not fatal: requests then
   * go without a token, and the server's 401 runs the command again (a vault unlocked meanwhile
   * gives the token), or answers the request with the command's failure.
   */
  static async start(command: string, deps: TokenCommandDeps): Promise<TokenCommandCredential> {
    const credential = new TokenCommandCredential(command, deps);
    await credential.#run().catch((error: unknown) => {
      const failure = error as BridgeError;
      deps.logger.error({ code: failure.code, exitCode: failure.context.exitCode, hint: failure.context.hint }, failure.message);
    });
    return credential;
  }

  authorization(): string | undefined {
    return this.#authorization;
  }

  renew(challenge: CredentialChallenge, signal: AbortSignal): Promise<boolean> {
    // Another request already renewed it: the refused token is no longer the one sent.
    if (challenge.sent !== this.#authorization) return Promise.resolve(true);
    this.#renewal ??= this.#run().finally(() => (this.#renewal = undefined));
    return untilAborted(this.#renewal, signal);
  }

  close(): Promise<void> {
    this.#closed.abort();
    return Promise.resolve();
  }

  /** Runs the command; resolves true when it printed a token other than the current one. */
  async #run(): Promise<boolean> {
    const options: TokenCommandOptions = { env: this.#deps.env, signal: this.#closed.signal };
    if (this.#deps.timeoutMs !== undefined) options.timeoutMs = this.#deps.timeoutMs;
    let token: string;
    try {
      token = await runTokenCommand(this.#command, options);
    } catch (error) {
      this.lastFailure = error as BridgeError;
      throw error;
    }
    this.lastFailure = undefined;
    // Registered before it is first sent, so no log line or server echo can show it.
    registerSecret(this.#deps.redact, this.#deps.logger, token, 'the token from --token-command');
    const next = `Bearer ${token}`;
    const changed = next !== this.#authorization;
    this.#authorization = next;
    this.#deps.logger.debug({ changed }, '--token-command gave a token');
    return changed;
  }
}
