// doctor's report for people and programs: each check's line as it ends, a spinner while one runs, the verdict, all masked.

import type { BridgeConfig } from '../config/config.js';
import { MAX_MESSAGE_CHARS, shorten, toTerminalLine } from '../core/terminal-text.js';
import type { Logger } from '../logging/logger.js';
import type { Redactor } from '../logging/redactor.js';
import { runDoctor, type Check, type DoctorProgress, type DoctorReport } from './doctor.js';

/**
 * The report with the run's secrets masked in every text a server or the network could have put
 * there (server names, error bodies, WWW-Authenticate), for both the text and the JSON form.
 */
export function redactReport(report: DoctorReport, redact: Redactor): DoctorReport {
  return { ...report, url: redact(report.url), checks: report.checks.map((check) => redactCheck(check, redact)) };
}

function redactCheck(check: Check, redact: Redactor): Check {
  return { ...check, name: redact(check.name), detail: redact(check.detail), ...(check.hint === undefined ? {} : { hint: redact(check.hint) }) };
}

/** Wide enough for every check's name (the longest is `credential`), so lines printed one by one still line up. */
export const CHECK_NAME_CHARS = 10;
/** How often the spinner on a terminal moves. */
const SPINNER_FRAME_MS = 80;
const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Erases the current terminal line: carriage return, then ECMA-48 "Erase in Line" (entire line). */
const CLEAR_LINE = '\r\x1b[2K';

/**
 * One check's line with ✓, ! or ✗, and the hint under a failure or a warning. A detail quotes what the server sent
 * (its serverInfo name and version, a WWW-Authenticate header, a JSON-RPC error, a certificate's
 * names), so each field is shown on one line with every control character visible (CWE-150), and
 * the detail and hint are cut at MAX_MESSAGE_CHARS: a server's error message may be megabytes.
 * The check comes masked (redactCheck), so it is masked, then cut, then escaped.
 */
export function formatCheck(check: Check): string {
  const name = toTerminalLine(check.name);
  const width = Math.max(CHECK_NAME_CHARS, name.length);
  const line = `${markOf(check)} ${name.padEnd(width)}  ${toTerminalLine(shorten(check.detail, MAX_MESSAGE_CHARS))}\n`;
  return (check.ok && check.warns !== true) || check.hint === undefined
    ? line
    : `${line}  ${' '.repeat(width)}  hint: ${toTerminalLine(shorten(check.hint, MAX_MESSAGE_CHARS))}\n`;
}

/** ✓ only for what was verified; ! for what works but not as meant; – for what was not checked. */
function markOf(check: Check): string {
  if (!check.ok) return '✗';
  if (check.warns === true) return '!';
  return check.checked === false ? '–' : '✓';
}

function formatVerdict(report: DoctorReport): string {
  return report.ok ? 'fenbs-mcp can bridge to this server.\n' : 'fenbs-mcp cannot work with these settings yet: fix the first ✗ above.\n';
}

/** What a check came to, in the JSON report: the same four outcomes the human form marks ✓ ✗ ! –. */
export type CheckStatus = 'passed' | 'failed' | 'warning' | 'not-checked';

/**
 * The report as --json prints it: each check with its `status`; one not checked has no `ok` at all
 * (it neither passed nor failed, so `"ok": true` would tell a script it was verified).
 */
export function toJsonReport(report: DoctorReport): object {
  return {
    ...report,
    checks: report.checks.map(({ checked, ...check }) => {
      const status: CheckStatus = checked === false ? 'not-checked' : !check.ok ? 'failed' : check.warns === true ? 'warning' : 'passed';
      if (status !== 'not-checked') return { ...check, status };
      const { ok: _verdictOnly, ...unverified } = check;
      return { ...unverified, status };
    }),
  };
}

/** The human form: one line per check with ✓, – (not checked) or ✗, and the hint under a failure, then the verdict. */
export function formatReport(report: DoctorReport): string {
  return `${report.checks.map(formatCheck).join('')}${formatVerdict(report)}`;
}

/** Where `reportDoctor` writes: the report to `stdout`, what is being waited for to `stderr`. */
export interface DoctorOutput {
  stdout: { write(text: string): unknown };
  /** `isTTY` true: a spinner line that is erased when the check ends; otherwise one plain line per start. */
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** Only the final report, as one JSON object, and nothing on stderr. */
  json: boolean;
  redact: Redactor;
  /** The run's logger (--log-level, --log-file): each check at debug, the verdict at info. */
  log?: Logger | undefined;
}

/**
 * Runs doctor as the command does. Text: each check's line on stdout as it ends, the verdict last,
 * and on stderr what is being waited for as each check starts. JSON: only the final report.
 * Everything printed is masked with `redact`. Returns the masked report.
 */
export async function reportDoctor(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>, output: DoctorOutput): Promise<DoctorReport> {
  const { stdout, stderr, redact, log } = output;
  const logProgress = (event: DoctorProgress) => {
    if (event.kind === 'start') log?.debug({ check: event.name }, `doctor: ${event.doing}`);
    else
      log?.debug(
        { check: event.check.name, ok: event.check.ok, detail: event.check.detail, hint: event.check.hint },
        `doctor: ${event.check.name} ${event.check.ok ? 'passed' : 'failed'}`,
      );
  };
  // At debug: the verdict is already the report's last line on stdout; said again on stderr at
  // the default level it reads as a second verdict. A --log-file at debug still records it.
  const logVerdict = (report: DoctorReport) => {
    const failed = report.checks.find((check) => !check.ok);
    log?.debug(
      { ok: report.ok, checks: report.checks.length, failed: failed?.name },
      report.ok ? 'doctor: every check passed' : `doctor: the ${failed?.name ?? ''} check failed`,
    );
  };
  if (output.json) {
    const report = redactReport(await runDoctor(config, env, { onProgress: logProgress, redact, ...(log === undefined ? {} : { logger: log }) }), redact);
    stdout.write(`${JSON.stringify(toJsonReport(report))}\n`);
    logVerdict(report);
    return report;
  }
  const spinner = stderr.isTTY === true;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    if (timer === undefined) return;
    clearInterval(timer);
    timer = undefined;
    stderr.write(CLEAR_LINE);
  };
  const onProgress = (event: DoctorProgress) => {
    logProgress(event);
    if (event.kind === 'done') {
      stop();
      // Masked first, then escaped: a secret is recognised in the spelling it was sent in.
      stdout.write(formatCheck(redactCheck(event.check, redact)));
      return;
    }
    const waiting = toTerminalLine(redact(`${event.name.padEnd(CHECK_NAME_CHARS)}  ${event.doing}`));
    if (!spinner) {
      stderr.write(`… ${waiting}\n`);
      return;
    }
    stop();
    let frame = 0;
    const draw = () => stderr.write(`${CLEAR_LINE}${SPINNER_FRAMES[frame++ % SPINNER_FRAMES.length]} ${waiting}`);
    draw();
    timer = setInterval(draw, SPINNER_FRAME_MS);
  };
  let report: DoctorReport;
  try {
    report = redactReport(await runDoctor(config, env, { onProgress, redact, ...(log === undefined ? {} : { logger: log }) }), redact);
  } finally {
    stop();
  }
  stdout.write(formatVerdict(report));
  logVerdict(report);
  return report;
}
