// The platform tool as a real process: a stand-in `secret-tool` on PATH that hangs, floods, or records what it was given.

import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { secretToolCommands } from '../../../../src/credentials/oauth/keychain-commands.js';
import { createKeychainStore, createToolRunner } from '../../../../src/credentials/oauth/keychain-store.js';
import { isRunning, pidIn, waitUntilGone } from '../../../helpers/processes.js';

const KEY = '0123456789abcdef';
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder holding an executable `secret-tool` with `body`, to put first on PATH. */
function standIn(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-secret-tool-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'secret-tool'), `#!/bin/sh\n${body.replaceAll('$DIR', dir)}\n`);
  chmodSync(join(dir, 'secret-tool'), 0o755);
  return dir;
}

function storeWith(dir: string, limits: { timeoutMs?: number; maxOutputBytes?: number } = {}) {
  const run = createToolRunner({ PATH: `${dir}:${process.env.PATH ?? ''}` });
  return createKeychainStore({ commands: secretToolCommands(), run, label: 'fenbs-mcp:test', ...limits });
}

describe.skipIf(process.platform === 'win32')('the keychain store with a real tool process', () => {
  it('kills a tool that does not answer within the call deadline, and counts the store unreachable', async () => {
    const dir = standIn('echo $$ > $DIR/pid; exec sleep 30');
    const started = Date.now();
    expect(storeWith(dir, { timeoutMs: 300 }).probe()).toBe('probe: it did not answer within 300 ms (a locked keyring waiting for its password?)');
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = pidIn(join(dir, 'pid'));
    await waitUntilGone(pid);
    expect(isRunning(pid)).toBe(false);
  });

  it('stops reading a tool that prints more than the output bound, and fails the call', () => {
    const dir = standIn('head -c 100000 /dev/zero | tr "\\0" x');
    expect(() => storeWith(dir, { maxOutputBytes: 1_000 }).get(KEY)).toThrow('the Secret Service (secret-tool) failed (get: it printed more than 1000 bytes)');
  });

  it('hands the secret to the tool on stdin and never in its arguments', () => {
    const dir = standIn('printf "%s\\n" "$@" > $DIR/args; cat > $DIR/stdin');
    storeWith(dir).set(KEY, 'the-secret-on-stdin');
    expect(readFileSync(join(dir, 'stdin'), 'utf8')).toBe('the-secret-on-stdin');
    const args = readFileSync(join(dir, 'args'), 'utf8');
    expect(args).toBe(`store\n--label=fenbs-mcp:test\nservice\nfenbs-mcp\naccount\n${KEY}\n`);
    expect(args).not.toContain('the-secret-on-stdin');
  });

  it('refuses a key with shell syntax before any tool runs', () => {
    const dir = standIn('printf "%s\\n" "$@" > $DIR/args');
    expect(() => storeWith(dir).get('$(touch pwned)')).toThrow(/a credential store key is/);
    expect(() => readFileSync(join(dir, 'args'))).toThrow();
  });
});
