// Runs runBridge in this process over PassThrough streams, with the same handle as a spawned bridge.

import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { loggerOptions } from '../../src/logging/logger.js';
import { runBridge, type BridgeExit } from '../../src/bridge.js';
import { createConfig, type BridgeConfig, type RawOptions } from '../../src/config/config.js';
import { createRedactor, type Redactor } from '../../src/logging/redactor.js';
import type { McpServer } from './hardening-servers.js';
import { collectLines, initializedNotification, initializeRequest, type BridgeHandle } from './spawn-bridge.js';

export interface InProcessBridge extends BridgeHandle {
  config: BridgeConfig;
  redact: Redactor;
  /** The PassThrough the bridge reads as stdin (pause it, write bytes, end it). */
  input: PassThrough;
  /** The PassThrough the bridge writes as stdout. */
  output: PassThrough;
  /** The stream the bridge's logger writes to (the in-process stderr). */
  log: PassThrough;
  /** Aborts the bridge's signal, as SIGTERM does in the CLI. */
  signal(): void;
  /** Resolves with why runBridge returned. */
  exited: Promise<{ exit: BridgeExit }>;
}

/** Long options that take a value, as the CLI spells them; `-H` is `--header`. */
const VALUE_OPTIONS = new Set([
  'url',
  'token-env',
  'token-file',
  'token-command',
  'header',
  'request-timeout',
  'connect-timeout',
  'stream-idle-timeout',
  'max-line-bytes',
  'max-message-bytes',
  'keep-alive',
  'ca-file',
  'client-cert',
  'client-key',
  'log-level',
  'log-file',
  'protocol',
  'transport',
  'allow-tools',
  'deny-tools',
  'oauth-client-id',
  'oauth-client-secret-file',
  'oauth-client-metadata-url',
  'oauth-issuer',
  'oauth-callback-port',
  'oauth-login-timeout',
  'oauth-scope',
  'oauth-resource',
  'oauth-authorize-param',
  'oauth-client-key',
]);

/** The CLI's argv (the subset the bridge takes) as the options commander would hand over. */
export function toRawOptions(args: readonly string[]): RawOptions {
  const options: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = arg === '-H' ? 'header' : arg.replace(/^--/, '');
    const key = name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    if (name === 'no-merge-pages') {
      options.mergePages = false;
    } else if (
      name === 'allow-http' ||
      name === 'oauth-device-code' ||
      name === 'oauth-client-credentials' ||
      name === 'use-system-ca' ||
      name === 'oauth-no-resource' ||
      name === 'oauth-allow-private-network'
    ) {
      options[key] = true;
    } else if (VALUE_OPTIONS.has(name)) {
      const value = args[++i];
      if (value === undefined) throw new Error(`${arg} needs a value`);
      const repeatable = name === 'header' || name === 'allow-tools' || name === 'deny-tools' || name === 'oauth-authorize-param';
      options[key] = repeatable ? [...((options[key] as string[] | undefined) ?? []), value] : value;
    } else {
      throw new Error(`the in-process bridge does not take ${arg}`);
    }
  }
  return options;
}

/**
 * Starts the bridge in-process: the same pipeline the CLI runs, so coverage of src/ is measured.
 * Logs go to an in-memory stream (the handle's `stderr()`), masked by the same redactor.
 */
export function startInProcessBridge(
  args: string[],
  env: Record<string, string | undefined> = {},
  /** Settings past what the CLI accepts (a keep-alive under a second), so a test's clock can run fast. */
  overrides: Partial<BridgeConfig> = {},
): InProcessBridge {
  const fullEnv = { FENBS_MCP_LOG_LEVEL: 'warn', ...env };
  const config = { ...createConfig({ options: toRawOptions(args), env: fullEnv, readTextFile: (path) => readFileSync(path, 'utf8') }), ...overrides };
  const redact = createRedactor([
    config.token,
    ...config.headerSecrets.map((secret) => secret.value),
    config.clientCertificate?.passphrase,
    config.clientCertificate?.key,
  ]);
  let log = '';
  const logStream = new PassThrough();
  logStream.setEncoding('utf8');
  logStream.on('data', (chunk: string) => (log += chunk));
  const logger = pino(loggerOptions(config.logLevel, redact), logStream);
  const input = new PassThrough();
  const output = new PassThrough();
  const controller = new AbortController();
  const collector = collectLines(output, () => log);
  const exited = runBridge({ input, output, config, logger, redact, env: fullEnv, signal: controller.signal }).then((exit) => {
    output.end();
    return { exit };
  });
  output.on('end', () => collector.closed());
  return {
    config,
    redact,
    input,
    output,
    log: logStream,
    send: (message) => input.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`),
    sendRaw: (data) => input.write(data),
    end: () => input.end(),
    lines: collector.lines,
    stderr: () => log,
    waitFor: collector.waitFor,
    reply: collector.reply,
    signal: () => controller.abort(),
    exited,
    kill: () => {
      controller.abort();
      if (!input.writableEnded) input.end();
    },
  };
}

/** Resolves once `stream` has emitted data and `done()` holds, or rejects with `describe()` after `timeoutMs`. */
function waitOnStream(stream: PassThrough, done: () => boolean, describe: () => string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!done()) return;
      stream.off('data', check);
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      stream.off('data', check);
      reject(new Error(describe()));
    }, timeoutMs);
    stream.on('data', check);
    check();
  });
}

/** Resolves when the bridge's log matches `pattern`, or rejects after `timeoutMs`. */
export function waitForLog(bridge: InProcessBridge, pattern: RegExp, timeoutMs = 10_000): Promise<void> {
  return waitOnStream(
    bridge.log,
    () => pattern.test(bridge.stderr()),
    () => `the log never matched ${String(pattern)}:\n${bridge.stderr()}`,
    timeoutMs,
  );
}

/** Resolves when the bridge has written at least `count` stdout lines, or rejects after `timeoutMs`. */
export function waitForLineCount(bridge: InProcessBridge, count: number, timeoutMs = 10_000): Promise<void> {
  return waitOnStream(
    bridge.output,
    () => bridge.lines.length >= count,
    () => `only ${bridge.lines.length} of ${count} stdout lines within ${timeoutMs} ms; log:\n${bridge.stderr()}`,
    timeoutMs,
  );
}

/** Opens the bridge's 2025 session with `server`: initialize answered, notifications/initialized received by the server. */
export async function openSession(bridge: InProcessBridge, server: McpServer): Promise<InProcessBridge> {
  bridge.send(initializeRequest(1));
  await bridge.reply(1);
  bridge.send(initializedNotification);
  await server.waitForRequest((r) => r.message?.method === 'notifications/initialized');
  return bridge;
}
