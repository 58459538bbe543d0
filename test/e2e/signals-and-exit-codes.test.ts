// Signals and exit codes end to end: in-flight work is aborted and answered, the session ends, the process is gone within 1 s.

import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnedMode } from '../helpers/bridge-mode.js';
import { serversForFile } from '../helpers/hardening-servers.js';
import { BIN, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';
import { defineLifecycleSuite } from '../suites/lifecycle.js';

defineLifecycleSuite(spawnedMode);

// Exit codes are the CLI's, around runBridge: only a process shows them.
const { track: stopAfterAll } = serversForFile();
const track = (bridge: BridgeProcess) => (stopAfterAll(() => bridge.kill()), bridge);

describe('exit codes', () => {
  it.each([
    ['an unknown option', ['--no-such-option']],
    ['a request timeout that is not a number', ['--request-timeout', 'soon']],
    ['a connect timeout of zero', ['--connect-timeout', '0']],
    ['a URL that is not http(s)', ['--url', 'ftp://127.0.0.1/mcp']],
    ['a URL with credentials in it', ['--url', 'https://user:pw@127.0.0.1/mcp']],
    ['an unknown log level', ['--log-level', 'loud']],
    ['a malformed -H', ['-H', 'no colon here']],
    ['a header the bridge owns', ['-H', 'Mcp-Session-Id: abc']],
    ['a --token-file that does not exist', ['--token-file', '/nonexistent/fenbs-token']],
    ['a --ca-file that does not exist', ['--ca-file', '/nonexistent/fenbs-ca.pem']],
    ['--demo with --url', ['--demo', '--url', 'https://127.0.0.1/mcp']],
  ])('exits 2 with one message on stderr for %s, before reading stdin', async (_, args) => {
    const bridge = track(spawnBridge(args));
    expect((await bridge.exited).code).toBe(2);
    expect(bridge.stderr()).toMatch(/^fenbs-mcp: /);
    expect(bridge.stderr()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(bridge.lines).toEqual([]);
  });

  it.each([['--help'], ['--version']])('exits 0 for %s', async (flag) => {
    const bridge = track(spawnBridge([flag]));
    expect((await bridge.exited).code).toBe(0);
  });

  it('exits 1 when stdin cannot be read (a fatal failure)', async () => {
    // fd 0 opened for writing only: every read fails with EBADF.
    const fd = openSync(join(mkdtempSync(join(tmpdir(), 'fenbs-stdin-')), 'write-only'), 'w');
    const child = spawn(process.execPath, [BIN, '--url', 'http://127.0.0.1:9/mcp'], { stdio: [fd, 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
    closeSync(fd);
    stopAfterAll(() => child.kill('SIGKILL'));
    let [stdout, stderr] = ['', ''];
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/reading stdin failed/);
  });
});
