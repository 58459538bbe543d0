// A private Secret Service for tests: its own D-Bus session bus and an unlocked gnome-keyring, with the env to hand to bridges.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** What the keychain tests need on PATH. */
const TOOLS = ['secret-tool', 'gnome-keyring-daemon', 'dbus-daemon'];
/** How long the bus may take to print its address. */
const BUS_START_TIMEOUT_MS = 10_000;

/** Why no Secret Service can be started here (a tool missing), or undefined when one can. */
export function secretServiceMissing(): string | undefined {
  const missing = TOOLS.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0);
  return missing.length === 0 ? undefined : `${missing.join(', ')} not installed (apt-get install gnome-keyring libsecret-tools dbus-x11)`;
}

/** CI sets FENBS_REQUIRE_KEYRING=1: there a missing Secret Service fails the keychain tests instead of skipping them. */
export const KEYRING_REQUIRED = process.env.FENBS_REQUIRE_KEYRING === '1';

export interface SecretService {
  /** DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR, for a bridge to reach this Secret Service. */
  env: Record<string, string>;
  /** What `secret-tool search --all service fenbs-mcp` prints (both streams): empty when nothing is kept. */
  search(): string;
  /** Stops the bus; the keyring daemon, a client of it, exits with it. */
  close(): Promise<void>;
}

/**
 * Starts a session bus and a gnome-keyring-daemon whose login keyring is created, and unlocked,
 * with a password on stdin. Its files go under `home` (XDG_DATA_HOME=home/.local/share): encrypted,
 * and scanned with the rest by tests that look for secrets in files.
 */
export async function startSecretService(home: string): Promise<SecretService> {
  const missing = secretServiceMissing();
  if (missing !== undefined) throw new Error(`no Secret Service for the keychain tests: ${missing}`);
  const runtime = mkdtempSync(join(tmpdir(), 'fenbs-keyring-run-'));
  mkdirSync(join(home, '.local', 'share'), { recursive: true });
  const base = { PATH: process.env.PATH ?? '', HOME: home, XDG_DATA_HOME: join(home, '.local', 'share'), XDG_RUNTIME_DIR: runtime };
  const bus = spawn('dbus-daemon', ['--session', '--nofork', '--nopidfile', '--print-address=1'], { env: base, stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: bus.stdout });
  const timer = setTimeout(() => bus.kill('SIGKILL'), BUS_START_TIMEOUT_MS);
  const [address] = (await Promise.race([once(lines, 'line'), once(bus, 'exit').then(() => [undefined])])) as [string | undefined];
  clearTimeout(timer);
  if (address === undefined) throw new Error('dbus-daemon printed no address');
  const env = { ...base, DBUS_SESSION_BUS_ADDRESS: address.trim() };
  // --daemonize: the parent exits once the daemon runs; its output is ignored so no pipe outlives it.
  const keyring = spawn('gnome-keyring-daemon', ['--unlock', '--components=secrets', '--daemonize'], { env, stdio: ['pipe', 'ignore', 'inherit'] });
  keyring.stdin.end('fenbs-test-keyring-password');
  const [code] = (await once(keyring, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`gnome-keyring-daemon --unlock exited with ${code}`);
  return {
    env: { DBUS_SESSION_BUS_ADDRESS: env.DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR: runtime },
    search: () => {
      const result = spawnSync('secret-tool', ['search', '--all', 'service', 'fenbs-mcp'], { env, encoding: 'utf8' });
      return `${result.stdout}${result.stderr}`;
    },
    close: async () => {
      if (bus.exitCode === null && bus.signalCode === null) {
        bus.kill('SIGTERM');
        await once(bus, 'exit');
      }
      rmSync(runtime, { recursive: true, force: true });
    },
  };
}

/** Keeps `secret` under `account` in the Secret Service at `env` (for tests that plant an entry). */
export function storeSecret(env: Record<string, string>, account: string, secret: string): void {
  execFileSync('secret-tool', ['store', '--label=planted', 'service', 'fenbs-mcp', 'account', account], {
    env: { PATH: process.env.PATH, ...env },
    input: secret,
  });
}
