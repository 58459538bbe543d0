// The platform tool calls that keep a secret in the OS credential store, and what their answers mean; secrets travel on stdin only.

import { join } from 'node:path';

/** The service every entry is kept under: `secret-tool search --all service fenbs-mcp` lists them. */
export const KEYCHAIN_SERVICE = 'fenbs-mcp';
/** The account the availability probe looks up; nothing is ever stored under it. */
export const PROBE_KEY = 'availability-probe';
/** macOS `security`: the item could not be found (errSecItemNotFound). */
const MAC_NOT_FOUND = 44;
/**
 * `security -i` reads each command into a fixed line buffer and cuts what is longer (about 1 KiB
 * was seen): 384 secret bytes are 768 hex digits, with room for the command, key and label.
 */
export const MAC_SECRET_BYTES_PER_LINE = 384;
/** The longest label on a `security -i` line, for the same reason. */
const MAC_LABEL_CHARS = 60;
/** The PowerShell scripts' own exit status for "no such entry". */
const WINDOWS_NOT_FOUND = 3;

/** One run of a tool, exactly as spawned (`shell: false`): the command, its arguments, what it reads on stdin. */
export interface ToolCall {
  readonly command: string;
  readonly args: readonly string[];
  readonly input: string | undefined;
}

/** How a tool run ended: its exit status (null when it was killed) and what it printed. */
export interface ToolResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export type ToolAnswer = { kind: 'found'; text: string } | { kind: 'absent' } | { kind: 'done' } | { kind: 'failed'; reason: string };

export type ToolOperation = 'probe' | 'get' | 'set' | 'delete';

/** The calls for one platform's credential store. */
export interface KeychainCommands {
  readonly description: string;
  /** The tool's word that a set took is not to be trusted (macOS `security -i` exits 0 whatever its commands did): read it back. */
  readonly verifySet: boolean;
  /** The most secret bytes one set may carry, or undefined for no bound of the tool's own (longer secrets are kept in pieces). */
  readonly maxSecretBytesPerCall: number | undefined;
  probe(): ToolCall;
  get(key: string): ToolCall;
  set(key: string, secret: string, label: string): ToolCall;
  delete(key: string): ToolCall;
  answer(operation: ToolOperation, result: ToolResult): ToolAnswer;
}

/** Keys are the hex names of cache files: nothing else ever reaches a command line or a script. */
function checkedKey(key: string): string {
  if (!/^[0-9a-z-]{1,64}$/.test(key)) throw new Error('a credential store key is 1 to 64 characters of 0-9, a-z and -');
  return key;
}

/** A label may name a host, never more: it is an argument (and on macOS a word of a command line read by `security -i`). */
function checkedLabel(label: string, maxChars = 200): string {
  return label.replace(/[^0-9A-Za-z.:[\]_-]/g, '_').slice(0, maxChars);
}

function failure(operation: ToolOperation, result: ToolResult): ToolAnswer {
  const said = result.stderr.trim().split('\n')[0]?.slice(0, 200);
  return { kind: 'failed', reason: `${operation} exited with status ${result.status}${said === undefined || said === '' ? '' : `: ${said}`}` };
}

/** Linux and the BSDs: the Secret Service over D-Bus (GNOME Keyring, KWallet), through libsecret's `secret-tool`. */
export function secretToolCommands(): KeychainCommands {
  const attributes = (key: string) => ['service', KEYCHAIN_SERVICE, 'account', checkedKey(key)];
  return {
    description: 'the Secret Service (secret-tool)',
    verifySet: false,
    maxSecretBytesPerCall: undefined,
    probe: () => ({ command: 'secret-tool', args: ['lookup', ...attributes(PROBE_KEY)], input: undefined }),
    get: (key) => ({ command: 'secret-tool', args: ['lookup', ...attributes(key)], input: undefined }),
    // secret-tool reads the secret from stdin when stdin is not a terminal.
    set: (key, secret, label) => ({ command: 'secret-tool', args: ['store', `--label=${checkedLabel(label)}`, ...attributes(key)], input: secret }),
    delete: (key) => ({ command: 'secret-tool', args: ['clear', ...attributes(key)], input: undefined }),
    answer(operation, result) {
      if (result.status === 0) return operation === 'get' ? { kind: 'found', text: result.stdout } : { kind: 'done' };
      // Status 1 and silence is "nothing stored"; status 1 with a message is a store it cannot reach
      // ("Cannot autolaunch D-Bus without X11 $DISPLAY", "The name org.freedesktop.secrets was not provided").
      if (result.status === 1 && result.stderr.trim() === '' && operation !== 'set') return operation === 'probe' ? { kind: 'done' } : { kind: 'absent' };
      return failure(operation, result);
    },
  };
}

function hex(text: string): string {
  return Buffer.from(text, 'utf8').toString('hex');
}

/** macOS: the login keychain through `security`; a secret is written by `security -i` reading its command from stdin. */
export function macSecurityCommands(): KeychainCommands {
  const item = (key: string) => ['-s', KEYCHAIN_SERVICE, '-a', checkedKey(key)];
  return {
    description: 'the macOS keychain (security)',
    verifySet: true,
    maxSecretBytesPerCall: MAC_SECRET_BYTES_PER_LINE,
    probe: () => ({ command: '/usr/bin/security', args: ['find-generic-password', ...item(PROBE_KEY)], input: undefined }),
    get: (key) => ({ command: '/usr/bin/security', args: ['find-generic-password', ...item(key), '-w'], input: undefined }),
    // `-w <secret>` would put it in argv (ps shows it to every user); `-X` takes it as hex, on a line read from stdin.
    set: (key, secret, label) => {
      // A longer line would be cut, and the keychain would keep a piece of the secret as the whole.
      if (Buffer.byteLength(secret) > MAC_SECRET_BYTES_PER_LINE) throw new Error(`security -i takes at most ${MAC_SECRET_BYTES_PER_LINE} secret bytes a line`);
      return {
        command: '/usr/bin/security',
        args: ['-i'],
        input: `add-generic-password -U ${item(key).join(' ')} -l ${checkedLabel(label, MAC_LABEL_CHARS)} -X ${hex(secret)}\n`,
      };
    },
    delete: (key) => ({ command: '/usr/bin/security', args: ['delete-generic-password', ...item(key)], input: undefined }),
    answer(operation, result) {
      if (result.status === 0) return operation === 'get' ? { kind: 'found', text: result.stdout.replace(/\n$/, '') } : { kind: 'done' };
      if (result.status === MAC_NOT_FOUND && operation !== 'set') return operation === 'probe' ? { kind: 'done' } : { kind: 'absent' };
      return failure(operation, result);
    },
  };
}

/** A PowerShell single-quoted literal: the only special character inside is the quote itself, doubled. */
function psLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** PowerShell runs `script` given as -EncodedCommand (UTF-16LE, base64), so no quoting of Windows argv is involved. */
function powershell(script: string, input: string | undefined): ToolCall {
  const prelude = "$ErrorActionPreference = 'Stop'; Add-Type -AssemblyName System.Security; ";
  return {
    command: 'powershell.exe',
    args: ['-NoLogo', '-NoProfile', '-NonInteractive', '-EncodedCommand', Buffer.from(prelude + script, 'utf16le').toString('base64')],
    input,
  };
}

/**
 * Windows: DPAPI (the user's own Windows key, CurrentUser scope) through PowerShell, one protected
 * file per key in `directory`. Credential Manager caps an entry at 2,560 bytes, less than one large
 * access token. The secret travels on stdin and back on stdout as base64, immune to code pages.
 */
export function windowsDpapiCommands(directory: string): KeychainCommands {
  const path = (key: string) => psLiteral(join(directory, `${checkedKey(key)}.dpapi`));
  const cu = '[Security.Cryptography.DataProtectionScope]::CurrentUser';
  return {
    description: `Windows DPAPI (protected files in ${directory})`,
    verifySet: false,
    maxSecretBytesPerCall: undefined,
    probe: () => powershell('[void][Security.Cryptography.ProtectedData]; exit 0', undefined),
    get: (key) =>
      powershell(
        `$p = ${path(key)}; if (-not (Test-Path -LiteralPath $p)) { exit ${WINDOWS_NOT_FOUND} }; ` +
          `$b = [Security.Cryptography.ProtectedData]::Unprotect([IO.File]::ReadAllBytes($p), $null, ${cu}); [Console]::Out.Write([Convert]::ToBase64String($b))`,
        undefined,
      ),
    set: (key, secret) =>
      powershell(
        `$p = ${path(key)}; New-Item -ItemType Directory -Force -Path ${psLiteral(directory)} | Out-Null; ` +
          `$b = [Convert]::FromBase64String([Console]::In.ReadToEnd().Trim()); ` +
          `[IO.File]::WriteAllBytes($p, [Security.Cryptography.ProtectedData]::Protect($b, $null, ${cu}))`,
        Buffer.from(secret, 'utf8').toString('base64'),
      ),
    delete: (key) =>
      powershell(`$p = ${path(key)}; if (-not (Test-Path -LiteralPath $p)) { exit ${WINDOWS_NOT_FOUND} }; Remove-Item -LiteralPath $p -Force`, undefined),
    answer(operation, result) {
      if (result.status === 0)
        return operation === 'get' ? { kind: 'found', text: Buffer.from(result.stdout.trim(), 'base64').toString('utf8') } : { kind: 'done' };
      if (result.status === WINDOWS_NOT_FOUND && (operation === 'get' || operation === 'delete')) return { kind: 'absent' };
      return failure(operation, result);
    },
  };
}

/** The calls for `platform`, or undefined where fenbs-mcp knows no credential store. */
export function keychainCommandsFor(platform: NodeJS.Platform, cacheDirectory: string): KeychainCommands | undefined {
  if (platform === 'darwin') return macSecurityCommands();
  if (platform === 'win32') return windowsDpapiCommands(join(cacheDirectory, 'secrets'));
  if (platform === 'linux' || platform === 'freebsd' || platform === 'openbsd') return secretToolCommands();
  return undefined;
}
