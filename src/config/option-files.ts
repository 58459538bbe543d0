// Reads a file an option names through the injected reader, within its size limit; a missing or oversized file is a UsageError naming the option.

import { UsageError } from '../core/errors.js';

/** Thrown by a `readTextFile` when the file holds more than the bytes the caller allows. */
export class FileTooLargeError extends Error {
  override readonly name = 'FileTooLargeError';
  constructor(
    readonly path: string,
    readonly maxBytes: number,
  ) {
    super(`${path} is larger than ${maxBytes} bytes`);
  }
}

/**
 * Reads a text file (injected so config/ stays pure); throws `FileTooLargeError` rather than read
 * more than `maxBytes`.
 */
export type ReadTextFile = (path: string, maxBytes: number) => string;

export function readOptionFile(readTextFile: ReadTextFile, option: string, path: string, maxBytes: number, fix?: string): string {
  try {
    return readTextFile(path, maxBytes);
  } catch (error) {
    if (error instanceof FileTooLargeError) {
      throw new UsageError(`${option} ${path} is larger than ${maxBytes} bytes: it cannot be the right file`, fix);
    }
    throw new UsageError(`cannot read ${option} ${path}: ${(error as Error).message}`, fix);
  }
}

/** The options that name a file: each is read (or, for --log-file, written) at the path given. */
export const PATH_OPTIONS = ['tokenFile', 'caFile', 'clientCert', 'clientKey', 'logFile', 'oauthClientSecretFile', 'oauthClientKey'] as const;

/**
 * `path` with a leading `~` or `~/` (`~\` too) turned into the home folder, as a shell would:
 * desktop hosts start the bridge without a shell, so `"~/fenbs-mcp.log"` in a client's config
 * arrives as written. `~user/…` is left as it is (whose home that is, only the system can say),
 * and so is a path with no home to put there.
 */
export function expandHome(path: string, env: Readonly<Record<string, string | undefined>>): string {
  if (path !== '~' && !path.startsWith('~/') && !path.startsWith('~\\')) return path;
  const home = env.HOME?.trim() || env.USERPROFILE?.trim();
  if (home === undefined) return path;
  return path === '~' ? home : `${home.replace(/[/\\]+$/, '')}${path.slice(1)}`;
}

/** `options` with every path option (PATH_OPTIONS) home-expanded: the one place it happens. */
export function withHomeExpanded<Options extends Partial<Record<(typeof PATH_OPTIONS)[number], string | undefined>>>(
  options: Options,
  env: Readonly<Record<string, string | undefined>>,
): Options {
  let expanded: Options | undefined;
  for (const name of PATH_OPTIONS) {
    const value = options[name];
    if (typeof value !== 'string' || expandHome(value, env) === value) continue;
    expanded ??= { ...options };
    (expanded as Record<string, unknown>)[name] = expandHome(value, env);
  }
  return expanded ?? options;
}
