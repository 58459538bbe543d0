// In-process CLI runs: main as bin/ calls it, with what it writes to the process's own streams captured.

import { afterEach, beforeEach, vi } from 'vitest';
import { main } from '../../src/cli/main.js';

/** Runs main as bin/ does, with `args` after the node binary and the script. */
export const runCli = (...args: string[]): Promise<number> => main(['node', 'fenbs-mcp', ...args]);

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
}

/** captureProcessOutput into one object, emptied before each test of the calling file. */
export function captureCliOutput(): CapturedOutput {
  const output: CapturedOutput = { stdout: '', stderr: '' };
  beforeEach(() => {
    output.stdout = '';
    output.stderr = '';
  });
  captureProcessOutput((stream, text) => (output[stream] += text));
  return output;
}
