import { describe, expect, it } from 'vitest';
import {
  keychainCommandsFor,
  MAC_SECRET_BYTES_PER_LINE,
  macSecurityCommands,
  secretToolCommands,
  windowsDpapiCommands,
  type ToolCall,
} from '../../../../src/credentials/oauth/keychain-commands.js';

const KEY = '0123456789abcdef0123456789abcdef';
// Quotes, a space, a newline, a backslash and a non-ASCII letter: whatever a secret holds.
const SECRET = `{"accessToken":"tok 'en\\"x"}\n€`;

/** Every argument, decoded where it is an -EncodedCommand: where a secret must never appear. */
function argvText(call: ToolCall): string {
  const encoded = call.args.indexOf('-EncodedCommand');
  const script = encoded === -1 ? '' : Buffer.from(call.args[encoded + 1]!, 'base64').toString('utf16le');
  return [call.command, ...call.args, script].join('\n');
}

describe('secretToolCommands (Linux)', () => {
  const commands = secretToolCommands();

  it('stores with the secret on stdin only, under service fenbs-mcp and the key as account', () => {
    const call = commands.set(KEY, SECRET, 'fenbs-mcp:mcp.example.com');
    expect(call).toEqual({
      command: 'secret-tool',
      args: ['store', '--label=fenbs-mcp:mcp.example.com', 'service', 'fenbs-mcp', 'account', KEY],
      input: SECRET,
    });
  });

  it('looks up, clears and probes by attributes, with nothing on stdin', () => {
    expect(commands.get(KEY)).toEqual({ command: 'secret-tool', args: ['lookup', 'service', 'fenbs-mcp', 'account', KEY], input: undefined });
    expect(commands.delete(KEY)).toEqual({ command: 'secret-tool', args: ['clear', 'service', 'fenbs-mcp', 'account', KEY], input: undefined });
    expect(commands.probe().args).toEqual(['lookup', 'service', 'fenbs-mcp', 'account', 'availability-probe']);
  });

  it('reads status 1 with silence as nothing stored, and status 1 with a message as a store it cannot reach', () => {
    expect(commands.answer('get', { status: 0, stdout: SECRET, stderr: '' })).toEqual({ kind: 'found', text: SECRET });
    expect(commands.answer('get', { status: 1, stdout: '', stderr: '' })).toEqual({ kind: 'absent' });
    expect(commands.answer('delete', { status: 1, stdout: '', stderr: '' })).toEqual({ kind: 'absent' });
    expect(commands.answer('probe', { status: 1, stdout: '', stderr: '' })).toEqual({ kind: 'done' });
    expect(commands.answer('probe', { status: 1, stdout: '', stderr: 'secret-tool: Cannot autolaunch D-Bus without X11 $DISPLAY\n' })).toEqual({
      kind: 'failed',
      reason: 'probe exited with status 1: secret-tool: Cannot autolaunch D-Bus without X11 $DISPLAY',
    });
    expect(commands.answer('set', { status: 1, stdout: '', stderr: '' }).kind).toBe('failed');
  });
});

describe('macSecurityCommands (macOS)', () => {
  const commands = macSecurityCommands();

  it('adds the secret as hex on a command line read by security -i from stdin, never in argv', () => {
    const call = commands.set(KEY, SECRET, 'fenbs-mcp:mcp.example.com');
    expect(call.command).toBe('/usr/bin/security');
    expect(call.args).toEqual(['-i']);
    const hex = Buffer.from(SECRET, 'utf8').toString('hex');
    expect(call.input).toBe(`add-generic-password -U -s fenbs-mcp -a ${KEY} -l fenbs-mcp:mcp.example.com -X ${hex}\n`);
    expect(argvText(call)).not.toContain(hex);
    expect(commands.verifySet).toBe(true);
  });

  it('keeps a security -i line under 1 KiB with the longest key, label and secret piece, and refuses a longer piece', () => {
    const line = commands.set('f'.repeat(64), '\u007e'.repeat(MAC_SECRET_BYTES_PER_LINE), 'l'.repeat(500)).input!;
    expect(Buffer.byteLength(line)).toBeLessThan(1024);
    expect(() => commands.set(KEY, 'x'.repeat(MAC_SECRET_BYTES_PER_LINE + 1), 'l')).toThrow(
      `security -i takes at most ${MAC_SECRET_BYTES_PER_LINE} secret bytes a line`,
    );
    expect(commands.maxSecretBytesPerCall).toBe(MAC_SECRET_BYTES_PER_LINE);
  });

  it('finds with -w and deletes by service and account; status 44 is nothing stored', () => {
    expect(commands.get(KEY)).toEqual({ command: '/usr/bin/security', args: ['find-generic-password', '-s', 'fenbs-mcp', '-a', KEY, '-w'], input: undefined });
    expect(commands.delete(KEY).args).toEqual(['delete-generic-password', '-s', 'fenbs-mcp', '-a', KEY]);
    expect(commands.answer('get', { status: 0, stdout: 'abc\n', stderr: '' })).toEqual({ kind: 'found', text: 'abc' });
    expect(commands.answer('get', { status: 44, stdout: '', stderr: 'could not be found' })).toEqual({ kind: 'absent' });
    expect(commands.answer('probe', { status: 44, stdout: '', stderr: '' })).toEqual({ kind: 'done' });
    expect(commands.answer('probe', { status: 36, stdout: '', stderr: 'User interaction is not allowed.' }).kind).toBe('failed');
  });

  it('turns a label into one word of safe characters, so it cannot add a word to the line security -i reads', () => {
    expect(commands.set(KEY, 'x', 'a b -w "c"\nd').input).toContain(' -l a_b_-w__c__d -X ');
  });
});

describe('windowsDpapiCommands (Windows)', () => {
  const commands = windowsDpapiCommands("C:\\Users\\O'Brien\\fenbs-mcp\\secrets");

  it('protects the secret read from stdin as base64, with a script that names only the file', () => {
    const call = commands.set(KEY, SECRET, 'label');
    expect(call.command).toBe('powershell.exe');
    expect(call.args.slice(0, 4)).toEqual(['-NoLogo', '-NoProfile', '-NonInteractive', '-EncodedCommand']);
    expect(call.input).toBe(Buffer.from(SECRET, 'utf8').toString('base64'));
    const argv = argvText(call);
    expect(argv).toContain('[Console]::In.ReadToEnd()');
    expect(argv).toContain('ProtectedData]::Protect(');
    expect(argv).toContain(`'C:\\Users\\O''Brien\\fenbs-mcp\\secrets`);
    for (const spelling of [SECRET, call.input!, 'accessToken']) expect(argv).not.toContain(spelling);
  });

  it('answers a get in base64 and reads it back as the secret; exit 3 is nothing stored', () => {
    expect(argvText(commands.get(KEY))).toContain('ProtectedData]::Unprotect(');
    expect(commands.get(KEY).input).toBeUndefined();
    const stdout = `${Buffer.from(SECRET, 'utf8').toString('base64')}\r\n`;
    expect(commands.answer('get', { status: 0, stdout, stderr: '' })).toEqual({ kind: 'found', text: SECRET });
    expect(commands.answer('get', { status: 3, stdout: '', stderr: '' })).toEqual({ kind: 'absent' });
    expect(commands.answer('delete', { status: 3, stdout: '', stderr: '' })).toEqual({ kind: 'absent' });
    expect(commands.answer('probe', { status: 1, stdout: '', stderr: 'Add-Type : Cannot find' }).kind).toBe('failed');
  });
});

describe('keychainCommandsFor', () => {
  it('picks the tool by platform, and none where no credential store is known', () => {
    expect(keychainCommandsFor('linux', '/h')?.description).toBe('the Secret Service (secret-tool)');
    expect(keychainCommandsFor('darwin', '/h')?.description).toBe('the macOS keychain (security)');
    expect(keychainCommandsFor('win32', 'C:\\h')?.description).toMatch(/^Windows DPAPI/);
    expect(keychainCommandsFor('aix', '/h')).toBeUndefined();
  });

  it('refuses a key that is not a cache file name, before anything could reach a command line', () => {
    for (const commands of [secretToolCommands(), macSecurityCommands(), windowsDpapiCommands('C:\\h')]) {
      expect(() => commands.get('x; rm -rf /')).toThrow(/a credential store key is/);
      expect(() => commands.set("a'b", 's', 'l')).toThrow(/a credential store key is/);
    }
  });
});
