// The exit codes of every command, as the README's table documents them.

/** Exit codes; documented in the README's table. */
export const EXIT = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
  /** doctor: a check failed, so the bridge cannot work with these settings. */
  DOCTOR_FAILED: 3,
  /** Shell commands (tools, call…): the server could not be reached or answered unusably, what doctor checks. */
  UNREACHABLE: 3,
  /** Stopped by Ctrl-C (SIGINT): 128 + 2, what shells expect of a program they interrupted. */
  INTERRUPTED: 130,
} as const;
