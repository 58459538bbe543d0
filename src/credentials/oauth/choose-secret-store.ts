// Picks, once per run, where the token cache keeps its secrets: the OS credential store when a probe reaches it, else 0600 files.

import { UsageError } from '../../core/errors.js';
import { createChunkedStore } from './chunked-secret-store.js';
import { keychainCommandsFor } from './keychain-commands.js';
import { createKeychainStore, createToolRunner, type ToolRunner } from './keychain-store.js';
import type { SecretStore, TokenStoreMode } from './secret-store.js';

export interface SecretStoreChoice {
  /** Undefined: secrets stay in the cache files, as the rest does. */
  store: SecretStore | undefined;
  /** Where the tokens go and why, said once at info level. */
  note: string;
}

export interface ChooseOptions {
  mode: TokenStoreMode;
  platform: NodeJS.Platform;
  env: Readonly<Record<string, string | undefined>>;
  /** The token cache folder: named when secrets stay there, and home of the DPAPI files on Windows. */
  cacheDirectory: string;
  /** The entry's label in the credential store's own user interface. */
  label: string;
  /** A seam for tests; spawnSync of the platform tool otherwise. */
  run?: ToolRunner;
}

/** What to install or start for each platform's store, for the `keychain` refusal. */
function fixFor(platform: NodeJS.Platform): string {
  if (platform === 'darwin') return 'sign in to a macOS user session whose login keychain is unlocked';
  if (platform === 'win32') return 'run fenbs-mcp as a signed-in Windows user with PowerShell available';
  return 'install secret-tool (libsecret-tools) and run a Secret Service (gnome-keyring, KWallet), unlocked, in a session with DBUS_SESSION_BUS_ADDRESS set';
}

/**
 * `file`: the files. `auto`: the OS credential store if its probe answers, else the files (the note
 * says why). `keychain`: the OS credential store, or a UsageError naming the fix when unreachable.
 */
export function chooseSecretStore(options: ChooseOptions): SecretStoreChoice {
  const inFiles = (why: string): SecretStoreChoice => ({
    store: undefined,
    note: `OAuth tokens are kept in private (0600) files under ${options.cacheDirectory}: ${why}`,
  });
  if (options.mode === 'file') return inFiles('--token-store file');
  const commands = keychainCommandsFor(options.platform, options.cacheDirectory);
  let unreachable: string;
  if (commands === undefined) {
    unreachable = `fenbs-mcp knows no credential store on ${options.platform}`;
  } else {
    const store = createKeychainStore({ commands, run: options.run ?? createToolRunner(options.env), label: options.label });
    const problem = store.probe();
    if (problem === undefined) {
      const chunked = commands.maxSecretBytesPerCall === undefined ? store : createChunkedStore(store, commands.maxSecretBytesPerCall);
      return { store: chunked, note: `OAuth tokens are kept in ${commands.description}; the cache files hold no secret` };
    }
    unreachable = `${commands.description} is not reachable (${problem})`;
  }
  if (options.mode === 'auto') return inFiles(`no OS credential store is reachable: ${unreachable}`);
  // A mistake in how the bridge was started, refused before anything is read or sent.
  throw new UsageError(`--token-store keychain: ${unreachable}: ${fixFor(options.platform)}`, 'fenbs-mcp --token-store auto (falls back to private files)');
}
