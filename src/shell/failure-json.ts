// What a shell command prints on stdout with --json when it fails: one JSON object, so a script always has one JSON text to read.

import { MAX_MESSAGE_CHARS, shorten } from '../core/terminal-text.js';

/** Why a command failed. */
export interface ShellFailure {
  /** The bridge's stable code (REMOTE_UNREACHABLE…), or USAGE, INTERRUPTED, JSON_RPC_ERROR. */
  code: string;
  message: string;
  hint?: string | undefined;
  /** The server's JSON-RPC error code, when the server answered with one. */
  rpcCode?: number | undefined;
}

/** `{"ok":false,"error":{…}}`, its texts bounded as the lines on stderr are. */
export function toFailureJson(failure: ShellFailure): string {
  const error: Record<string, string | number> = { code: failure.code, message: shorten(failure.message, MAX_MESSAGE_CHARS) };
  if (failure.hint !== undefined) error.hint = shorten(failure.hint, MAX_MESSAGE_CHARS);
  if (failure.rpcCode !== undefined) error.rpcCode = failure.rpcCode;
  return JSON.stringify({ ok: false, error });
}
