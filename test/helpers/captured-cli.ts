// In-process CLI runs: main as bin/ calls it, with what it writes to the process's own streams captured.

import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';
import { main } from '../../src/cli/main.js';

/** The output of the test now running, when its file captures one. */
let current: CapturedOutput | undefined;

/**
 * Runs main as bin/ does, with `args` after the node binary and the script. The commands' log lines
 * (written to a descriptor, not through process.stderr) go to a file of this run, then to the
 * captured `log`, instead of the test runner's output.
 */
export const runCli = async (...args: string[]): Promise<number> => {
  const file = join(mkdtempSync(join(tmpdir(), 'fenbs-cli-log-')), 'stderr.log');
  // The logger closes this descriptor when it ends (sonic-boom closes any but 1 and 2); a run that
  // made no logger (a usage mistake, help) leaves it to the test worker's exit.
  const logFd = openSync(file, 'a');
  try {
    return await main(['node', 'fenbs-mcp', ...args], { logFd });
  } finally {
    if (current !== undefined) current.log += readFileSync(file, 'utf8');
  }
};

/**
 * For every test of the calling file, hands what is written to process.stdout and process.stderr to
 * `write` instead of the test runner's output, and restores the streams after the test.
 */
export function captureProcessOutput(write: (stream: 'stdout' | 'stderr', text: string) => void): void {
  beforeEach(() => {
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (write('stdout', String(chunk)), true));
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (write('stderr', String(chunk)), true));
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
}

/** What main wrote to stdout and stderr in the current test; emptied before each test, and assignable to empty it. */
export interface CapturedOutput {
  stdout: string;
  stderr: string;
  /** The log lines the commands wrote for stderr (pino's, through their own descriptor). */
  log: string;
}

/** captureProcessOutput into one object, emptied before each test of the calling file. */
export function captureCliOutput(): CapturedOutput {
  const output: CapturedOutput = { stdout: '', stderr: '', log: '' };
  beforeEach(() => {
    output.stdout = '';
    output.stderr = '';
    output.log = '';
    current = output;
  });
  afterEach(() => {
    current = undefined;
  });
  captureProcessOutput((stream, text) => (output[stream] += text));
  return output;
}
