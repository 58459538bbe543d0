// runBridge: the whole pipeline, stdin lines → checks → POSTs → replies → stdout, and its shutdown.

import type { Readable, Writable } from 'node:stream';
import type { Dispatcher } from './http/undici-parts.js';
import type { BridgeConfig } from './config/config.js';
import type { Credential } from './core/credential.js';
import { EraTranslator } from './eras/era-translator.js';
import { BridgeError } from './core/errors.js';
import { progressTokenOf, toLoggedId, type IncomingMessage, type JsonObject } from './core/json-rpc.js';
import type { Logger } from './logging/logger.js';
import type { Redactor } from './logging/redactor.js';
import { createMessageWriter, type MessageWriter } from './stdio/stdout-writer.js';
import { readMessages } from './stdio/message-intake.js';
import { ToolFilter } from './pipeline/tool-filter.js';
import { reachServer } from './connection.js';
import { connectPipeline, type Connection } from './pipeline/connect.js';

/** Messages posted and not yet finished before the bridge stops reading stdin for a while. */
export const MAX_MESSAGES_IN_FLIGHT = 4096;

export interface BridgeOptions {
  input: Readable;
  output: Writable;
  config: BridgeConfig;
  logger: Logger;
  redact: Redactor;
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted by SIGTERM/SIGINT/SIGHUP: stop now, answer what is in flight, end the session. */
  signal: AbortSignal;
  /** Injected for tests; created from the config otherwise. */
  dispatcher?: Dispatcher;
  /** The run's credential; created from the config (and closed at the end) otherwise. */
  credential?: Credential;
  /** Where text for the person at the terminal goes (the OAuth sign-in URL); nowhere when absent. */
  writeStderr?: (text: string) => void;
  /**
   * Where warnings about the user's own settings go (a credential set but not used, a tool filter
   * that matches nothing): the shell commands print them as their own lines; `logger.warn` otherwise.
   */
  warn?: (message: string) => void;
  /**
   * stdin is a terminal, where a person types or pastes: a JSON value spread over several lines
   * (pretty-printed) is joined into one message (stdio/paste-joiner.ts). Never for a pipe, where
   * one message per line holds strictly.
   */
  terminalInput?: boolean;
}

/**
 * Why the run's --allow-tools / --deny-tools hide the tool `name`: the very error the bridge answers
 * a tools/call to it with (never posted), or undefined when it is shown. For callers that see only
 * runBridge (the shell commands), so they name the filter by the bridge's own rule.
 */
export function toolFilterRefusal(config: Pick<BridgeConfig, 'allowTools' | 'denyTools'>, name: string): BridgeError | undefined {
  return ToolFilter.from(config)?.refusal('tools/call', { params: { name } });
}

/** Why the bridge stopped; the CLI turns it into an exit code. */
export type BridgeExit = 'input-ended' | 'signal' | 'output-closed' | 'input-failed';

export async function runBridge(options: BridgeOptions): Promise<BridgeExit> {
  const { config, logger } = options;
  const warn = options.warn ?? ((message: string) => logger.warn(message));
  // Before the first line is read: a token command runs once here, so requests go with its token.
  const reach = await reachServer(config, { ...options, warn });
  let outputClosed: () => void = () => undefined;
  const outputGone = new Promise<'output-closed'>((resolve) => (outputClosed = () => resolve('output-closed')));
  const writer = createMessageWriter(
    options.output,
    (error) => {
      logger.debug({ err: error?.message }, 'stdout closed by the reader');
      outputClosed();
    },
    options.redact,
  );
  const toStdout = (message: JsonObject, serialised?: string | Buffer) => writer.write(message, serialised);
  // --protocol auto: a 2025-era client meeting a 2026-07-28-only server is translated; the
  // translator sits between stdin and the forwarder and on the way to stdout. Its own requests go
  // through the same lifecycle, and never wait behind a client message.
  const translator: EraTranslator | undefined =
    config.protocol === 'auto'
      ? new EraTranslator({
          write: toStdout,
          send: (request) => connection.forwarder.forwardRequest(request, true),
          cancel: (id): void => void connection.inFlight.cancel(id),
          track: (task) => tasks.track(task),
          logger,
          requestTimeoutMs: config.requestTimeoutMs,
        })
      : undefined;
  const write = translator?.write ?? toStdout;
  // While stdout is full, replies are not read further: TCP flow control then holds the server back.
  const room = () => (writer.full ? writer.room() : undefined);
  const connection: Connection = connectPipeline(reach.endpoint, { config, logger, redact: options.redact, write, room, warn });
  const tasks = new TaskSet(logger);

  const debug = logger.isLevelEnabled('debug');
  const take = (message: IncomingMessage): void => {
    if (message.kind === 'request') {
      // Guarded: the argument object would be built for every message even with debug off.
      if (debug) logger.debug({ method: message.method, id: toLoggedId(message.id) }, 'request');
      const progressToken = progressTokenOf(message.message);
      if (progressToken !== undefined) writer.expectProgress(message.id, progressToken);
      tasks.track(translator?.request(message) ?? connection.forwarder.forwardRequest(message));
    } else {
      tasks.track(translator?.other(message) ?? connection.forwarder.forwardOther(message));
    }
  };
  const reading = readMessages({
    input: options.input,
    maxLineBytes: config.maxLineBytes,
    logger,
    take,
    readsWhole: (message) => translator?.readsWhole(message) === true,
    reply: (message) => writer.write(message),
    // Stdin back-pressure: past this many messages in flight, or while stdout holds more than its
    // bound unread, stop reading until there is room, so a flood of lines or a client that stopped
    // reading costs a bounded amount of memory.
    room: () => tasks.room() ?? (writer.full && !writer.closed ? writer.room() : undefined),
    stopped: () => options.signal.aborted || writer.closed,
    terminalInput: options.terminalInput === true,
  });
  const aborted = new Promise<'signal'>((resolve) => {
    if (options.signal.aborted) resolve('signal');
    options.signal.addEventListener('abort', () => resolve('signal'), { once: true });
  });

  let exit: BridgeExit = await Promise.race([reading, aborted, outputGone]);
  // Shutdown has begun, whatever ended the run: the session is kept alive no longer.
  connection.beginShutdown();
  if (exit === 'input-ended') {
    // A pipeline (`printf … | fenbs-mcp`) closes stdin right after writing: finish what is in
    // flight first, each bounded by its deadline: exiting at EOF would lose the answers the
    // pipeline waits for. Listen subscriptions never end on their own, so they are answered as closed.
    connection.inFlight.failListens(new BridgeError('SHUTTING_DOWN', 'stdin closed: the subscription ends with the bridge'));
    translator?.inputEnded(new BridgeError('SHUTTING_DOWN', 'stdin closed: the client can no longer answer the input the server asked for'));
    const stopped = await Promise.race([tasks.drained(), aborted, outputGone]);
    if (stopped !== 'drained') exit = stopped;
  }
  await shutDown({ connection, translator, writer, config });
  await reach.close();
  return exit;
}

/**
 * Whatever ended the run, no request leaves without its one answer: what is still outstanding
 * (nothing, after a clean drain) is answered here and its exchange stopped; held-back responses are
 * written; the session ends within its grace.
 */
async function shutDown(run: { connection: Connection; translator: EraTranslator | undefined; writer: MessageWriter; config: BridgeConfig }): Promise<void> {
  const abandoned = new BridgeError('SHUTTING_DOWN', 'the bridge is shutting down; the request was abandoned');
  await run.translator?.close(abandoned);
  await run.connection.inFlight.failAll(abandoned);
  // A response held back a few milliseconds behind its progress is already answered: write it.
  await run.writer.flushed();
  await run.connection.close(run.config.shutdownGraceMs);
}

/** The run's message tasks: each one's stray failure logged, their count bounding stdin, and the drain at EOF. */
class TaskSet {
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #logger: Logger;
  /** Woken when a task ends while the reader waits for a free slot (one waiter, not one per task). */
  #slotFreed: (() => void) | undefined;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  track(task: Promise<unknown>): void {
    // Tasks answer their own failures; one that still rejects is a bug, logged instead of
    // becoming an unhandled rejection that would end the process.
    const settled = task.then(
      () => undefined,
      (error: unknown) => this.#logger.error({ err: error instanceof Error ? error.stack : String(error) }, 'internal error'),
    );
    this.#tasks.add(settled);
    void settled.finally(() => {
      this.#tasks.delete(settled);
      this.#slotFreed?.();
    });
  }

  /** Undefined while fewer than MAX_MESSAGES_IN_FLIGHT run; otherwise resolves when one ends. */
  room(): Promise<void> | undefined {
    if (this.#tasks.size < MAX_MESSAGES_IN_FLIGHT) return undefined;
    return new Promise<void>((resolve) => {
      this.#slotFreed = () => {
        this.#slotFreed = undefined;
        resolve();
      };
    });
  }

  drained(): Promise<'drained'> {
    return Promise.all([...this.#tasks]).then(() => 'drained' as const);
  }
}
