// In-process: --token-command run as a real shell command: its output, its failures, its limits, and its renewal.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/logging/redactor.js';
import { MAX_TOKEN_COMMAND_OUTPUT_BYTES, runTokenCommand, TOKEN_COMMAND_TIMEOUT_MS, TokenCommandCredential } from '../../../src/credentials/token-command.js';
import { isRunning, pidIn, waitUntilGone } from '../../helpers/processes.js';

const env = { PATH: process.env.PATH };
/** A file for the command to write the pid of the job it leaves behind (`echo $! > …`). */
const pidFile = () => join(mkdtempSync(join(tmpdir(), 'fenbs-token-pid-')), 'pid');
const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('the command should have failed'),
    (error: unknown) => error as { code: string; message: string; context: Record<string, unknown> },
  );
/** A logger whose lines are kept, to check what the credential says. */
const recordingLogger = () => {
  const lines: string[] = [];
  return { lines, logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }) };
};

describe('runTokenCommand', () => {
  it('resolves with the trimmed stdout, run through the shell with the environment given', async () => {
    expect(await runTokenCommand('printf "  %s\\n\\n" "$FENBS_TEST_SECRET"', { env: { ...env, FENBS_TEST_SECRET: 'shell-token-1' } })).toBe('shell-token-1');
  });

  it('names the exit code and the start of stderr of a command that fails, never its stdout', async () => {
    const failure = await failureOf(runTokenCommand('echo printed-token-2; echo "  locked \n vault  " >&2; exit 7', { env }));
    expect(failure).toMatchObject({
      code: 'TOKEN_COMMAND_FAILED',
      message: '--token-command exited with code 7: locked vault',
      context: { exitCode: 7, stderr: 'locked vault' },
    });
    expect(JSON.stringify(failure.context) + failure.message).not.toContain('printed-token-2');
  });

  it('cuts a long stderr to its first TOKEN_COMMAND_STDERR_EXCERPT_CHARS characters', async () => {
    const failure = await failureOf(runTokenCommand('yes eeee | head -c 100000 >&2; exit 1', { env }));
    expect(failure.message).toMatch(/^--token-command exited with code 1: (eeee ){60}…$/);
  });

  it('drops a single word cut at MAX_TOKEN_COMMAND_STDERR_BYTES whole: it may be a token no mask recognises in part', async () => {
    const failure = await failureOf(runTokenCommand('head -c 100000 /dev/zero | tr "\\0" e >&2; exit 1', { env }));
    expect(failure.message).toBe('--token-command exited with code 1');
  });

  it('says so when the command prints nothing, or only white space', async () => {
    expect((await failureOf(runTokenCommand('printf "  \\n"', { env }))).message).toBe('--token-command printed nothing on stdout (exit code 0)');
    expect((await failureOf(runTokenCommand('echo why >&2', { env }))).message).toBe('--token-command printed nothing on stdout (exit code 0); stderr: why');
  });

  it('refuses output that no Authorization header can carry, without repeating it', async () => {
    const failure = await failureOf(runTokenCommand('printf "line-one-secret\\nline-two"', { env }));
    expect(failure.message).toBe('--token-command printed a token that contains a line break, so it cannot be sent in an Authorization header');
  });

  // RFC 6750 §2.1: a b64token holds no space; "Bearer Bearer …" would be another header.
  it('refuses a token holding a space, and says to print the token alone when it starts with "Bearer "', async () => {
    const failure = await failureOf(runTokenCommand('printf "Bearer prefixed-token-2121\\n"', { env }));
    expect(failure).toMatchObject({
      code: 'TOKEN_COMMAND_FAILED',
      message: '--token-command printed a token that contains a space or a tab, so it cannot be sent in an Authorization header',
      context: { exitCode: 0, hint: expect.stringMatching(/without "Bearer " in front/) },
    });
    expect(JSON.stringify(failure.context) + failure.message).not.toContain('prefixed-token-2121');
    expect((await failureOf(runTokenCommand('printf "two\\tpart-token"', { env }))).message).toMatch(/contains a space or a tab/);
  });

  // A line end is the shape of command output; a CR inside the token would end the header early.
  it('takes the token without its CRLF line end, and refuses a carriage return inside it', async () => {
    expect(await runTokenCommand('printf "crlf-token-3131\\r\\n"', { env })).toBe('crlf-token-3131');
    expect((await failureOf(runTokenCommand('printf "cr-token\\rinside-3131\\r\\n"', { env }))).message).toMatch(/contains a line break/);
  });

  it('refuses a token wrapped in a terminal colour sequence', async () => {
    const failure = await failureOf(runTokenCommand('printf "\\033[32mcoloured-token-4141\\033[0m\\n"', { env }));
    expect(failure.message).toBe('--token-command printed a token that contains a control character, so it cannot be sent in an Authorization header');
  });

  it('masks what the command printed on stdout in the stderr of its failure: each line, each word, and their JSON spellings', async () => {
    const repeated = await failureOf(runTokenCommand('echo repeated-token-5151; echo repeated-token-5151 >&2; exit 1', { env }));
    expect(repeated).toMatchObject({ message: '--token-command exited with code 1: [REDACTED]', context: { exitCode: 1, stderr: '[REDACTED]' } });
    const quoted = await failureOf(
      runTokenCommand('echo "TOKEN=quoted-token-6161 (valid 3600 s)"; echo "token quoted-token-6161 expired" >&2; exit 2', { env }),
    );
    expect(quoted.message).toBe('--token-command exited with code 2: token [REDACTED] expired');
    // PHP and others write "/" as "\/" in JSON (RFC 8259 §7).
    const json = await failureOf(
      runTokenCommand(`printf '{"access_token":"slash/token-7171"}\\n'; printf 'refused {"access_token":"slash\\\\/token-7171"}\\n' >&2; exit 3`, { env }),
    );
    expect(json.message).not.toMatch(/token-7171/);
    expect(json.message).toMatch(/^--token-command exited with code 3: refused \{"\[REDACTED\]":"\[REDACTED\]"\}$/);
  });

  it('shows the control characters of its stderr instead of passing them on to a terminal', async () => {
    const failure = await failureOf(runTokenCommand(`printf '\\033]0;pwned\\007\\033[2J vault locked\\n' >&2; exit 4`, { env }));
    expect(failure.message).toBe('--token-command exited with code 4: \\x1b]0;pwned\\x07\\x1b[2J vault locked');
    expect(failure.context.stderr).toBe('\\x1b]0;pwned\\x07\\x1b[2J vault locked');
  });

  it('takes the token when the command exits, though a job it left behind holds stdout open, and stops that job', async () => {
    const pid = pidFile();
    const started = performance.now();
    // The deadline is long: waiting for the pipe to close would only end there.
    const token = await runTokenCommand(`sleep 120 & echo $! > "${pid}"; echo held-pipe-token-8181`, { env, timeoutMs: 20_000 });
    expect(token).toBe('held-pipe-token-8181');
    expect(performance.now() - started).toBeLessThan(5_000);
    await waitUntilGone(pidIn(pid));
  });

  it('sends SIGKILL to a job it left behind that ignores SIGTERM', async () => {
    const pid = pidFile();
    // Ignored before the job starts, so the job inherits it (an ignored signal stays ignored across fork and exec).
    const token = await runTokenCommand(`trap "" TERM; sleep 120 & echo $! > "${pid}"; echo ignoring-token-9191`, { env, timeoutMs: 20_000 });
    expect(token).toBe('ignoring-token-9191');
    expect(isRunning(pidIn(pid))).toBe(true);
    await waitUntilGone(pidIn(pid));
  });

  it('drops the word cut at MAX_TOKEN_COMMAND_STDERR_BYTES, which its mask could no longer match', async () => {
    // 16370 spaces, then the token: the cut at 16384 bytes falls inside it.
    const failure = await failureOf(
      runTokenCommand('echo cut-stderr-token-2323; head -c 16370 /dev/zero | tr "\\0" " " >&2; echo cut-stderr-token-2323 >&2; exit 1', { env }),
    );
    expect(failure.message).toBe('--token-command exited with code 1');
  });

  it('stops the whole process group at the deadline', async () => {
    const pid = pidFile();
    const failure = await failureOf(runTokenCommand(`sleep 120 & echo $! > "${pid}"; sleep 120`, { env, timeoutMs: 1_000 }));
    expect(failure.message).toBe('--token-command did not finish within 1000 ms');
    await waitUntilGone(pidIn(pid));
  });

  it('waits for the exit of a command that closed stdout but keeps running: its exit is what counts', async () => {
    const failure = await failureOf(runTokenCommand('printf closed-pipe-token-1010; exec >&-; sleep 120', { env, timeoutMs: 300 }));
    expect(failure.message).toBe('--token-command did not finish within 300 ms');
  });

  it('stops a command that prints 100 MB at MAX_TOKEN_COMMAND_OUTPUT_BYTES, long before its deadline', async () => {
    const started = performance.now();
    const failure = await failureOf(runTokenCommand('head -c 100000000 /dev/zero | tr "\\0" x', { env }));
    expect(failure.message).toBe(`--token-command printed more than ${MAX_TOKEN_COMMAND_OUTPUT_BYTES} bytes: a token is one line`);
    expect(performance.now() - started).toBeLessThan(TOKEN_COMMAND_TIMEOUT_MS / 10);
  });

  it('stops a command that prints more than maxOutputBytes', async () => {
    const failure = await failureOf(runTokenCommand('head -c 100000 /dev/zero | tr "\\0" x', { env, maxOutputBytes: 1000 }));
    expect(failure).toMatchObject({ message: '--token-command printed more than 1000 bytes: a token is one line', context: { maxOutputBytes: 1000 } });
  });

  it('stops a command that runs past timeoutMs, and answers at its deadline', async () => {
    // A background child holds stdout open too: the deadline does not wait for it.
    const failure = await failureOf(runTokenCommand('sleep 30 & sleep 30', { env, timeoutMs: 100 }));
    expect(failure).toMatchObject({ message: '--token-command did not finish within 100 ms', context: { timeoutMs: 100 } });
  });

  it('names the signal that killed the command', async () => {
    expect((await failureOf(runTokenCommand('kill -9 $$', { env }))).message).toBe('--token-command was killed by SIGKILL');
  });

  it('stops the command when its signal aborts, before or while it runs', async () => {
    const controller = new AbortController();
    const running = runTokenCommand('sleep 30', { env, signal: controller.signal });
    controller.abort();
    expect((await failureOf(running)).message).toBe('--token-command was stopped: the bridge is closing');
    expect((await failureOf(runTokenCommand('sleep 30', { env, signal: controller.signal }))).message).toBe(
      '--token-command was stopped: the bridge is closing',
    );
  });
});

describe('TokenCommandCredential', () => {
  const counted = () => {
    const dir = mkdtempSync(join(tmpdir(), 'fenbs-token-credential-'));
    const token = join(dir, 'token');
    const runs = join(dir, 'runs');
    writeFileSync(runs, '');
    return { token, runs, command: `echo run >> "${runs}"; cat "${token}"`, count: () => readFileSync(runs, 'utf8').split('\n').filter(Boolean).length };
  };

  it('starts with the token the command printed, registered with the redactor before its first use', async () => {
    const files = counted();
    writeFileSync(files.token, 'credential-token-one\n');
    const redact = createRedactor([]);
    const credential = await TokenCommandCredential.start(files.command, { env, logger: recordingLogger().logger, redact });
    expect(credential.source).toBe('--token-command');
    expect(credential.authorization()).toBe('Bearer credential-token-one');
    expect(redact('credential-token-one')).toBe('[REDACTED]');
    expect(credential.lastFailure).toBeUndefined();
  });

  it('resolves true at once, without running the command, for a refusal of a token that is no longer current', async () => {
    const files = counted();
    writeFileSync(files.token, 'credential-token-current\n');
    const credential = await TokenCommandCredential.start(files.command, { env, logger: recordingLogger().logger, redact: createRedactor([]) });
    const renewed = await credential.renew({ status: 401, wwwAuthenticate: undefined, sent: 'Bearer credential-token-older' }, new AbortController().signal);
    expect(renewed).toBe(true);
    expect(files.count()).toBe(1);
  });

  it('shares one run between concurrent renewals, and resolves false when the command printed the refused token again', async () => {
    const files = counted();
    writeFileSync(files.token, 'credential-token-same\n');
    const credential = await TokenCommandCredential.start(files.command, { env, logger: recordingLogger().logger, redact: createRedactor([]) });
    const challenge = { status: 401 as const, wwwAuthenticate: 'Bearer error="invalid_token"', sent: credential.authorization() };
    const signal = new AbortController().signal;
    expect(await Promise.all([credential.renew(challenge, signal), credential.renew(challenge, signal)])).toEqual([false, false]);
    expect(files.count()).toBe(2);
  });

  it('logs a failed first run, keeps it for doctor, and runs the command again on renewal', async () => {
    const files = counted();
    const { lines, logger } = recordingLogger();
    const credential = await TokenCommandCredential.start(files.command, { env, logger, redact: createRedactor([]) });
    expect(credential.authorization()).toBeUndefined();
    expect(credential.lastFailure?.message).toMatch(/^--token-command exited with code 1: cat: /);
    expect(lines.map((line) => JSON.parse(line) as { level: number; msg: string })).toContainEqual(
      expect.objectContaining({ level: 50, msg: expect.stringMatching(/--token-command exited with code 1/) }),
    );
    writeFileSync(files.token, 'credential-token-late\n');
    expect(await credential.renew({ status: 401, wwwAuthenticate: undefined, sent: undefined }, new AbortController().signal)).toBe(true);
    expect(credential.authorization()).toBe('Bearer credential-token-late');
    expect(credential.lastFailure).toBeUndefined();
  });

  it('never keeps a token no header can carry, and runs the command again at the next renewal', async () => {
    const files = counted();
    writeFileSync(files.token, 'Bearer prefixed-credential-2424\n');
    const credential = await TokenCommandCredential.start(files.command, { env, logger: recordingLogger().logger, redact: createRedactor([]) });
    expect(credential.authorization()).toBeUndefined();
    expect(credential.lastFailure?.message).toMatch(/printed a token that contains a space or a tab/);
    const challenge = { status: 401 as const, wwwAuthenticate: undefined, sent: undefined };
    expect((await failureOf(credential.renew(challenge, new AbortController().signal))).message).toMatch(/a space or a tab/);
    expect(credential.authorization()).toBeUndefined();
    writeFileSync(files.token, 'prefix-dropped-credential-2424\n');
    expect(await credential.renew(challenge, new AbortController().signal)).toBe(true);
    expect(credential.authorization()).toBe('Bearer prefix-dropped-credential-2424');
    expect(files.count()).toBe(3);
  });

  it('shares one run of a hung command between the renewals waiting on it, fails each at the deadline, and stops its group', async () => {
    const files = counted();
    const pid = pidFile();
    const credential = await TokenCommandCredential.start(`echo run >> "${files.runs}"; sleep 120 & echo $! > "${pid}"; wait`, {
      env,
      logger: recordingLogger().logger,
      redact: createRedactor([]),
      timeoutMs: 1_000,
    });
    expect(credential.lastFailure?.message).toBe('--token-command did not finish within 1000 ms');
    await waitUntilGone(pidIn(pid));
    const challenge = { status: 401 as const, wwwAuthenticate: undefined, sent: undefined };
    const waiting = [1, 2, 3].map(() => failureOf(credential.renew(challenge, new AbortController().signal)));
    expect((await Promise.all(waiting)).map((failure) => failure.message)).toEqual(Array(3).fill('--token-command did not finish within 1000 ms'));
    expect(files.count()).toBe(2);
    await waitUntilGone(pidIn(pid));
  });

  it('warns that a token shorter than 8 characters cannot be masked on stdout', async () => {
    const { lines, logger } = recordingLogger();
    await TokenCommandCredential.start('printf short', { env, logger, redact: createRedactor([]) });
    expect(lines.join('')).toMatch(/the token from --token-command is shorter than 8 characters/);
  });

  it('gives up a renewal at once when the request is cancelled, and stops the command when closed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fenbs-token-close-'));
    const hang = join(dir, 'hang');
    // Prints a token at start; once the hang file exists, it hangs instead.
    const credential = await TokenCommandCredential.start(`if [ -f "${hang}" ]; then sleep 30; fi; printf credential-token-start`, {
      env,
      logger: recordingLogger().logger,
      redact: createRedactor([]),
    });
    writeFileSync(hang, '');
    const challenge = { status: 401 as const, wwwAuthenticate: undefined, sent: credential.authorization() };
    const cancelled = new AbortController();
    const first = credential.renew(challenge, cancelled.signal);
    const second = credential.renew(challenge, new AbortController().signal);
    cancelled.abort(new Error('cancelled by the client'));
    expect((await failureOf(first)).message).toBe('cancelled by the client');
    await credential.close();
    expect((await failureOf(second)).message).toBe('--token-command was stopped: the bridge is closing');
    expect(credential.authorization()).toBe('Bearer credential-token-start');
  });
});
