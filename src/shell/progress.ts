// Shows a call's progress: a bar (or a spinner) on a terminal, plain log lines otherwise.

import type { Logger } from '../logging/logger.js';
import { shorten, toTerminalLine } from '../core/terminal-text.js';
import type { Progress } from './client.js';

/** Cells in the bar, in characters. */
export const BAR_WIDTH_CHARS = 24;
/** How often a spinner moves while the total is unknown, in ms. */
export const SPINNER_FRAME_MS = 100;
/** Width assumed when the terminal does not say, in characters. */
const DEFAULT_COLUMNS = 80;
const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FILLED = '█';
const EMPTY = '░';
/** Carriage return, then erase the whole line (ECMA-48 EL with parameter 2). */
export const CLEAR_LINE = '\r\x1b[2K';
/**
 * Longest progress message kept, in characters before escapes: wider than any terminal line, and
 * small enough that the spinner, which redraws ten times a second, never re-reads megabytes.
 */
export const MAX_PROGRESS_MESSAGE_CHARS = 512;

export interface ProgressView {
  update(progress: Progress): void;
  /** Erases the bar; called before the result (or an error) is printed. */
  clear(): void;
}

export interface ProgressTarget {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** The percentage shown, 0 to 100, rounded down so 100 % means done. */
export function percentOf(progress: number, total: number): number {
  if (!(total > 0)) return 0;
  return Math.max(0, Math.min(100, Math.floor((progress / total) * 100)));
}

/** The text of one progress report: `3/5 60%` and the server's message, or the count alone without a total. */
export function describeProgress({ progress, total, message }: Progress): string {
  const count = total === undefined ? `${progress}` : `${progress}/${total} ${percentOf(progress, total)}%`;
  return message === undefined ? count : `${count} ${message}`;
}

/**
 * The bar on a terminal, log lines otherwise. Each report's message is the server's text: it is
 * bounded and made one line with every control character shown here, before either view sees it,
 * so the only escape sequence the bar writes is its own CLEAR_LINE (CWE-150).
 */
export function createProgressView(target: ProgressTarget, logger: Logger): ProgressView {
  const view = target.isTTY === true ? new TerminalProgress(target) : new LoggedProgress(logger);
  return {
    update: (progress) =>
      view.update(progress.message === undefined ? progress : { ...progress, message: toTerminalLine(shorten(progress.message, MAX_PROGRESS_MESSAGE_CHARS)) }),
    clear: () => view.clear(),
  };
}

/** Without a terminal: one info line per report, no control characters, so logs and pipes stay plain. */
class LoggedProgress implements ProgressView {
  constructor(private readonly logger: Logger) {}

  update(progress: Progress): void {
    this.logger.info(`progress ${describeProgress(progress)}`);
  }

  clear(): void {
    // Nothing was drawn.
  }
}

/** On a terminal: one line redrawn in place, erased when the call ends. */
class TerminalProgress implements ProgressView {
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  #last: Progress | undefined;
  #drawn = false;

  constructor(private readonly target: ProgressTarget) {}

  update(progress: Progress): void {
    this.#last = progress;
    if (progress.total === undefined) {
      // The spinner keeps turning between reports, so a long quiet step still looks alive.
      this.#timer ??= setInterval(() => this.#draw(), SPINNER_FRAME_MS).unref();
    } else if (this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
    this.#draw();
  }

  clear(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#drawn) this.target.write(CLEAR_LINE);
    this.#drawn = false;
  }

  #draw(): void {
    const progress = this.#last;
    if (progress === undefined) return;
    let line: string;
    if (progress.total === undefined) {
      this.#frame = (this.#frame + 1) % SPINNER_FRAMES.length;
      line = `${SPINNER_FRAMES[this.#frame]} ${progress.message ?? 'working'} (${progress.progress})`;
    } else {
      const filled = Math.round((percentOf(progress.progress, progress.total) / 100) * BAR_WIDTH_CHARS);
      line = `${FILLED.repeat(filled)}${EMPTY.repeat(BAR_WIDTH_CHARS - filled)} ${describeProgress(progress)}`;
    }
    // One character short of the width: a line that fills it wraps on some terminals and cannot be erased.
    // A pseudo-terminal without a size says 0 columns: that is "unknown", not "no room".
    const columns = this.target.columns !== undefined && this.target.columns > 0 ? this.target.columns : DEFAULT_COLUMNS;
    this.target.write(`${CLEAR_LINE}${[...line].slice(0, Math.max(1, columns - 1)).join('')}`);
    this.#drawn = true;
  }
}
