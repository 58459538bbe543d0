// What the token cache asks of wherever it keeps secrets: get, set and delete one text by key.

export type { TokenStoreMode } from '../../config/oauth-settings.js';

/**
 * The largest secret kept: the secret part of one cache file (its tokens and client secrets), which
 * holds far less than the whole file may (MAX_CACHE_FILE_BYTES in token-store.ts, the same 256 KiB).
 */
export const MAX_SECRET_BYTES = 256 * 1024;

/** One secret per key (a cache file's key); every method throws when the store cannot be used. */
export interface SecretStore {
  /** Where the secrets go, for the log and doctor: "the Secret Service (secret-tool)". */
  readonly description: string;
  /** The secret, or undefined when none is kept under `key`. */
  get(key: string): string | undefined;
  /** Keeps `secret` under `key`, replacing any earlier one. */
  set(key: string, secret: string): void;
  /** Forgets `key`; true when something was kept under it. */
  delete(key: string): boolean;
}
