// In-process: `login` and `logout` through main, as a user runs them: what they say and the exit code.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { captureCliOutput, runCli } from '../../helpers/captured-cli.js';
import { freePort } from '../../helpers/hardening-servers.js';
import { EXIT } from '../../../src/cli/exit-codes.js';

const output = captureCliOutput();

beforeEach(() => {
  // A token cache of this test's own, and no credential from the environment that runs the tests.
  vi.stubEnv('FENBS_MCP_HOME', mkdtempSync(join(tmpdir(), 'fenbs-login-')));
  vi.stubEnv('FENBS_TOKEN', '');
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('fenbs-mcp login against a server that cannot be reached', () => {
  it('says nothing is listening at the address and exits 3, as every other command does', async () => {
    const port = await freePort();
    expect(await runCli('login', '--url', `http://127.0.0.1:${port}/mcp`)).toBe(EXIT.UNREACHABLE);
    expect(output.stderr).toBe(
      `fenbs-mcp: login failed: nothing is listening at 127.0.0.1:${port}\n  hint: check --url (host and port), or start the server\n`,
    );
    expect(output.stderr).not.toMatch(/OAuth/);
  });

  it('says the host name does not resolve and exits 3', async () => {
    // RFC 6761 §6.4: .invalid never resolves.
    expect(await runCli('login', '--url', 'https://fenbs-mcp-test.invalid/mcp')).toBe(EXIT.UNREACHABLE);
    expect(output.stderr).toMatch(
      /^fenbs-mcp: login failed: the host name fenbs-mcp-test\.invalid could not be resolved\n {2}hint: check the host name in --url/,
    );
    expect(output.stderr).not.toMatch(/does not offer OAuth sign-in/);
  });
});

describe('the exit codes of login and logout in the help', () => {
  it.each([['help'], ['--help']])('lists them in `fenbs-mcp %s` beside the other commands', async (flag) => {
    expect(await runCli(flag)).toBe(EXIT.OK);
    expect(output.stdout).toMatch(/^Exit codes:$/m);
    expect(output.stdout).toMatch(
      /^ {2}login, logout {5}0 done; 1 the sign-in failed or the server offers none; 2 usage; 3 the server could not be reached; 130 Ctrl-C$/m,
    );
    expect(output.stdout).toMatch(/^ {2}doctor {12}0 the bridge can work; 2 usage; 3 a check failed$/m);
  });

  it.each(['login', 'logout'])('lists them in `fenbs-mcp help %s`', async (command) => {
    expect(await runCli('help', command)).toBe(EXIT.OK);
    expect(output.stdout).toContain(
      'Exit codes: 0 done; 1 the sign-in failed or the server offers none; 2 usage; 3 the server could not be reached; 130 Ctrl-C.',
    );
  });
});
