// A SecretStore in the OS credential store, through its platform tool run without a shell, under a deadline and an output bound.

import { spawnSync } from 'node:child_process';
import type { KeychainCommands, ToolAnswer, ToolCall, ToolOperation, ToolResult } from './keychain-commands.js';
import { MAX_SECRET_BYTES, type SecretStore } from './secret-store.js';

/**
 * How long one call of the tool may take before it is killed. A locked keyring may open an unlock
 * prompt nobody answers (a headless session, a bridge started by a desktop app): the call must end,
 * and the store counts as unreachable. Real calls take tens of milliseconds.
 */
export const KEYCHAIN_CALL_TIMEOUT_MS = 5_000;
/**
 * The most a tool may print (stdout or stderr) before it is killed and its call fails: a secret of
 * MAX_SECRET_BYTES as base64 (Windows) plus room for a message.
 */
export const MAX_KEYCHAIN_OUTPUT_BYTES = Math.ceil((MAX_SECRET_BYTES * 4) / 3) + 64 * 1024;

/** Runs one tool call to its end and says how it ended. */
export type ToolRunner = (call: ToolCall, limits: { timeoutMs: number; maxOutputBytes: number }) => ToolResult | { failed: string };

/** The real runner: spawnSync, no shell, SIGKILL at the deadline, killed past the output bound. */
export function createToolRunner(env: Readonly<Record<string, string | undefined>>): ToolRunner {
  return (call, limits) => {
    const result = spawnSync(call.command, [...call.args], {
      shell: false,
      env: env,
      input: call.input ?? '',
      encoding: 'utf8',
      timeout: limits.timeoutMs,
      killSignal: 'SIGKILL',
      maxBuffer: limits.maxOutputBytes,
      windowsHide: true,
    });
    return toResult(result.error, result.status, result.stdout, result.stderr, limits);
  };
}

/** What a finished spawnSync means: a timeout, an output bound crossed, a missing tool, or the tool's own answer. */
export function toResult(
  error: NodeJS.ErrnoException | undefined,
  status: number | null,
  stdout: string | null,
  stderr: string | null,
  limits: { timeoutMs: number; maxOutputBytes: number },
): ToolResult | { failed: string } {
  if (error?.code === 'ETIMEDOUT') return { failed: `it did not answer within ${limits.timeoutMs} ms (a locked keyring waiting for its password?)` };
  if (error?.code === 'ENOBUFS') return { failed: `it printed more than ${limits.maxOutputBytes} bytes` };
  if (error?.code === 'ENOENT') return { failed: 'the tool is not installed' };
  if (error !== undefined) return { failed: error.message };
  // Node's bound counts per stream; this one counts both, as the limit says.
  if (Buffer.byteLength(stdout ?? '') + Buffer.byteLength(stderr ?? '') > limits.maxOutputBytes)
    return { failed: `it printed more than ${limits.maxOutputBytes} bytes` };
  return { status, stdout: stdout ?? '', stderr: stderr ?? '' };
}

export interface KeychainStoreOptions {
  commands: KeychainCommands;
  run: ToolRunner;
  /** The entry's label in the store's own user interface. */
  label: string;
  timeoutMs?: number;
  maxOutputBytes?: number;
}

/** A SecretStore over `commands`; every failure throws with the reason (never the secret). */
export function createKeychainStore(options: KeychainStoreOptions): SecretStore & { probe(): string | undefined } {
  const { commands, run } = options;
  const limits = { timeoutMs: options.timeoutMs ?? KEYCHAIN_CALL_TIMEOUT_MS, maxOutputBytes: options.maxOutputBytes ?? MAX_KEYCHAIN_OUTPUT_BYTES };
  const call = (operation: ToolOperation, toolCall: ToolCall): ToolAnswer => {
    const result = run(toolCall, limits);
    if ('failed' in result) return { kind: 'failed', reason: `${operation}: ${result.failed}` };
    return commands.answer(operation, result);
  };
  const fail = (answer: ToolAnswer & { kind: 'failed' }) => new Error(`${commands.description} failed (${answer.reason})`);
  const store = {
    description: commands.description,
    /** Why the store cannot be used now, or undefined when it can. */
    probe(): string | undefined {
      const answer = call('probe', commands.probe());
      return answer.kind === 'failed' ? answer.reason : undefined;
    },
    get(key: string): string | undefined {
      const answer = call('get', commands.get(key));
      if (answer.kind === 'failed') throw fail(answer);
      return answer.kind === 'found' ? answer.text : undefined;
    },
    set(key: string, secret: string): void {
      if (Buffer.byteLength(secret) > MAX_SECRET_BYTES) throw new Error(`a secret of more than ${MAX_SECRET_BYTES} bytes is not kept`);
      const answer = call('set', commands.set(key, secret, options.label));
      if (answer.kind === 'failed') throw fail(answer);
      if (commands.verifySet && store.get(key) !== secret) throw new Error(`${commands.description} did not keep the secret`);
    },
    delete(key: string): boolean {
      const answer = call('delete', commands.delete(key));
      if (answer.kind === 'failed') throw fail(answer);
      return answer.kind === 'done';
    },
  };
  return store;
}
