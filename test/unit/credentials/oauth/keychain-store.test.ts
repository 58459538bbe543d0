import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../../src/core/errors.js';
import { chooseSecretStore } from '../../../../src/credentials/oauth/choose-secret-store.js';
import { macSecurityCommands, secretToolCommands, type ToolCall, type ToolResult } from '../../../../src/credentials/oauth/keychain-commands.js';
import {
  createKeychainStore,
  KEYCHAIN_CALL_TIMEOUT_MS,
  MAX_KEYCHAIN_OUTPUT_BYTES,
  toResult,
  type ToolRunner,
} from '../../../../src/credentials/oauth/keychain-store.js';
import { MAX_SECRET_BYTES } from '../../../../src/credentials/oauth/secret-store.js';

const KEY = 'abcdef0123456789';
const LIMITS = { timeoutMs: KEYCHAIN_CALL_TIMEOUT_MS, maxOutputBytes: MAX_KEYCHAIN_OUTPUT_BYTES };

/** A runner that records each call and answers from `answer`, spawning nothing. */
function fakeRunner(answer: (call: ToolCall) => ToolResult | { failed: string }): ToolRunner & { calls: ToolCall[]; limits: unknown[] } {
  const calls: ToolCall[] = [];
  const limits: unknown[] = [];
  const run = ((call: ToolCall, given: unknown) => {
    calls.push(call);
    limits.push(given);
    return answer(call);
  }) as ToolRunner & { calls: ToolCall[]; limits: unknown[] };
  run.calls = calls;
  run.limits = limits;
  return run;
}

describe('toResult: how a tool run ended', () => {
  it('reads a call killed at KEYCHAIN_CALL_TIMEOUT_MS as a failure that says so', () => {
    const error = Object.assign(new Error('spawnSync secret-tool ETIMEDOUT'), { code: 'ETIMEDOUT' });
    expect(toResult(error, null, '', '', LIMITS)).toEqual({
      failed: `it did not answer within ${KEYCHAIN_CALL_TIMEOUT_MS} ms (a locked keyring waiting for its password?)`,
    });
  });

  it('reads output past MAX_KEYCHAIN_OUTPUT_BYTES as a failure, whether Node stopped it (ENOBUFS) or both streams together cross it', () => {
    const bound = { failed: `it printed more than ${MAX_KEYCHAIN_OUTPUT_BYTES} bytes` };
    expect(toResult(Object.assign(new Error('ENOBUFS'), { code: 'ENOBUFS' }), null, 'x', '', LIMITS)).toEqual(bound);
    const half = 'x'.repeat(MAX_KEYCHAIN_OUTPUT_BYTES / 2 + 1);
    expect(toResult(undefined, 0, half, half, LIMITS)).toEqual(bound);
    const exact = 'x'.repeat(MAX_KEYCHAIN_OUTPUT_BYTES);
    expect(toResult(undefined, 0, exact, '', LIMITS)).toEqual({ status: 0, stdout: exact, stderr: '' });
  });

  it('reads a missing tool as a failure', () => {
    expect(toResult(Object.assign(new Error('spawnSync secret-tool ENOENT'), { code: 'ENOENT' }), null, null, null, LIMITS)).toEqual({
      failed: 'the tool is not installed',
    });
  });

  it('bounds the output above a base64 secret of MAX_SECRET_BYTES, so the largest secret still reads back', () => {
    expect(MAX_KEYCHAIN_OUTPUT_BYTES).toBeGreaterThan(Math.ceil(MAX_SECRET_BYTES / 3) * 4);
  });
});

describe('createKeychainStore', () => {
  it('runs every call with the named deadline and output bound', () => {
    const run = fakeRunner(() => ({ status: 0, stdout: 's', stderr: '' }));
    const store = createKeychainStore({ commands: secretToolCommands(), run, label: 'l' });
    store.get(KEY);
    store.set(KEY, 'secret');
    store.delete(KEY);
    expect(run.limits).toEqual([LIMITS, LIMITS, LIMITS]);
  });

  it('throws the reason of a failed call, never the secret', () => {
    const run = fakeRunner(() => ({ failed: 'it did not answer within 5000 ms' }));
    const store = createKeychainStore({ commands: secretToolCommands(), run, label: 'l' });
    expect(() => store.set(KEY, 'the-secret-value')).toThrow('the Secret Service (secret-tool) failed (set: it did not answer within 5000 ms)');
    expect(() => store.get(KEY)).toThrow(/failed \(get: /);
    expect(store.probe()).toBe('probe: it did not answer within 5000 ms');
  });

  it('refuses a secret larger than MAX_SECRET_BYTES without running the tool', () => {
    const run = fakeRunner(() => ({ status: 0, stdout: '', stderr: '' }));
    const store = createKeychainStore({ commands: secretToolCommands(), run, label: 'l' });
    expect(() => store.set(KEY, 'x'.repeat(MAX_SECRET_BYTES + 1))).toThrow(`a secret of more than ${MAX_SECRET_BYTES} bytes is not kept`);
    expect(run.calls).toEqual([]);
    store.set(KEY, 'x'.repeat(MAX_SECRET_BYTES));
    expect(run.calls).toHaveLength(1);
  });

  it('reads a macOS secret back after security -i, whose exit status says nothing of its commands', () => {
    const kept = new Map<string, string>();
    const run = fakeRunner((call) => {
      if (call.args[0] === '-i') return { status: 0, stdout: '', stderr: '' };
      const value = kept.get(KEY);
      return value === undefined ? { status: 44, stdout: '', stderr: '' } : { status: 0, stdout: `${value}\n`, stderr: '' };
    });
    const store = createKeychainStore({ commands: macSecurityCommands(), run, label: 'l' });
    expect(() => store.set(KEY, 'secret')).toThrow('the macOS keychain (security) did not keep the secret');
    expect(run.calls.map((call) => call.args[0])).toEqual(['-i', 'find-generic-password']);
  });
});

describe('chooseSecretStore', () => {
  const base = { platform: 'linux' as const, env: {}, cacheDirectory: '/home/u/.config/fenbs-mcp', label: 'fenbs-mcp:h' };
  const reachable = () => fakeRunner(() => ({ status: 1, stdout: '', stderr: '' }));
  const unreachable = () => fakeRunner(() => ({ status: 1, stdout: '', stderr: 'secret-tool: Cannot autolaunch D-Bus without X11 $DISPLAY' }));

  it('auto: the credential store when its probe answers', () => {
    const choice = chooseSecretStore({ ...base, mode: 'auto', run: reachable() });
    expect(choice.store?.description).toBe('the Secret Service (secret-tool)');
    expect(choice.note).toBe('OAuth tokens are kept in the Secret Service (secret-tool); the cache files hold no secret');
  });

  it('auto: private files when the probe fails, saying where and why', () => {
    const choice = chooseSecretStore({ ...base, mode: 'auto', run: unreachable() });
    expect(choice.store).toBeUndefined();
    expect(choice.note).toBe(
      'OAuth tokens are kept in private (0600) files under /home/u/.config/fenbs-mcp: no OS credential store is reachable: the Secret Service (secret-tool) is not reachable (probe exited with status 1: secret-tool: Cannot autolaunch D-Bus without X11 $DISPLAY)',
    );
  });

  it('keychain: a UsageError naming the fix when the probe fails, or when the platform has no known store', () => {
    expect(() => chooseSecretStore({ ...base, mode: 'keychain', run: unreachable() })).toThrow(UsageError);
    expect(() => chooseSecretStore({ ...base, mode: 'keychain', run: unreachable() })).toThrow(/install secret-tool \(libsecret-tools\)/);
    expect(() => chooseSecretStore({ ...base, platform: 'aix', mode: 'keychain', run: reachable() })).toThrow(/knows no credential store on aix/);
  });

  it('macOS: keeps a secret longer than one security -i line in pieces, each line within the bound', () => {
    const kept = new Map<string, string>();
    const run = fakeRunner((call) => {
      const add = /-a (\S+) -l \S+ -X ([0-9a-f]*)\n$/.exec(call.input ?? '');
      if (add !== null) {
        kept.set(add[1]!, Buffer.from(add[2]!, 'hex').toString('utf8'));
        return { status: 0, stdout: '', stderr: '' };
      }
      const value = kept.get(call.args[4] ?? '');
      return value === undefined ? { status: 44, stdout: '', stderr: '' } : { status: 0, stdout: `${value}\n`, stderr: '' };
    });
    const choice = chooseSecretStore({ ...base, platform: 'darwin', mode: 'auto', run });
    const secret = 'y'.repeat(2_000);
    choice.store!.set(KEY, secret);
    expect(choice.store!.get(KEY)).toBe(secret);
    const lines = run.calls.filter((call) => call.args[0] === '-i').map((call) => call.input!);
    expect(lines).toHaveLength(7);
    for (const line of lines) expect(Buffer.byteLength(line)).toBeLessThan(1024);
  });

  it('file: private files, and the tool is never run', () => {
    const run = reachable();
    expect(chooseSecretStore({ ...base, mode: 'file', run })).toEqual({
      store: undefined,
      note: 'OAuth tokens are kept in private (0600) files under /home/u/.config/fenbs-mcp: --token-store file',
    });
    expect(run.calls).toEqual([]);
  });
});
