// runBridge: the whole pipeline, stdin lines → checks → POSTs → replies → stdout, and its shutdown.

import type { Readable, Writable } from 'node:stream';
import type { Dispatcher } from './http/undici-parts.js';
import type { BridgeConfig } from './config/config.js';
import type { Credential } from './core/credential.js';
import { createCredential } from './credentials/create-credential.js';
import { Endpoint } from './http/endpoint.js';
import { EraTranslator } from './eras/era-translator.js';
import { BridgeError } from './core/errors.js';
import { Forwarder } from './pipeline/forwarder.js';
import { InFlight } from './pipeline/in-flight.js';
import { checkLine, errorReply, progressTokenOf, toLoggedId, type JsonObject } from './core/json-rpc.js';
import { checkLargeLine, wholeMessage } from './stdio/large-line.js';
import { LegacySession } from './eras/legacy-session.js';
import { ModernEra } from './eras/modern-era.js';
import { Router } from './pipeline/router.js';
import { pumpLines, takePieces, type LineEvent } from './stdio/line-reader.js';
import type { Logger } from './logging/logger.js';
import type { Redactor } from './logging/redactor.js';
import { createMessageWriter } from './stdio/stdout-writer.js';
import { ToolFilter } from './pipeline/tool-filter.js';
import { ToolHeaderRegistry } from './eras/tool-headers.js';
import { createDispatcher, remoteOptionsOf } from './http/dispatcher.js';
import { SseTransport } from './transports/http-sse.js';
import { TransportChoice, type MessageTransport } from './transports/automatic.js';
import { MAX_JOINED_LINES, PasteJoiner, type Joined } from './stdio/paste-joiner.js';

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
  const dispatcher = options.dispatcher ?? createDispatcher(remoteOptionsOf(config, options.env));
  // Before the first line is read: a token command runs once here, so requests go with its token.
  const credential =
    options.credential ??
    (await createCredential(config, {
      env: options.env,
      logger,
      redact: options.redact,
      dispatcher,
      warn,
      ...(options.writeStderr === undefined ? {} : { writeStderr: options.writeStderr }),
    }));
  let outputClosed: () => void = () => undefined;
  const outputGone = new Promise<void>((resolve) => (outputClosed = resolve));
  const writer = createMessageWriter(
    options.output,
    (error) => {
      logger.debug({ err: error?.message }, 'stdout closed by the reader');
      outputClosed();
    },
    options.redact,
  );
  const endpoint = new Endpoint(config, dispatcher, options.env, credential, { logger, redact: options.redact });
  const toStdout = (message: JsonObject, serialised?: string | Buffer) => writer.write(message, serialised);
  // --protocol auto: a 2025-era client meeting a 2026-07-28-only server is translated; the
  // translator sits between stdin and the forwarder and on the way to stdout.
  const translator: EraTranslator | undefined =
    config.protocol === 'auto'
      ? new EraTranslator({
          write: toStdout,
          // Not held behind the first request: the translator's own requests may follow from its answer.
          send: (request): Promise<void> => (choice?.current() ?? transport).forwardRequest(request),
          cancel: (id): void => void inFlight.cancel(id),
          track: (task) => track(task),
          logger,
          requestTimeoutMs: config.requestTimeoutMs,
        })
      : undefined;
  const write = translator?.write ?? toStdout;
  // While stdout is full, replies are not read further: TCP flow control then holds the server back.
  const room = () => (writer.full ? writer.room() : undefined);
  const inFlight = new InFlight({ write, requestTimeoutMs: config.requestTimeoutMs });
  const toolFilter = ToolFilter.from(config);
  const router = new Router({ inFlight, write, logger, toolFilter, warn });
  const legacy = new LegacySession({
    endpoint,
    logger,
    maxMessageBytes: config.maxMessageBytes,
    onServerMessage: (message, serialised) => router.route(message, serialised),
    room,
    keepAliveMs: config.keepAliveMs,
  });
  const modern = new ModernEra({ endpoint, tools: new ToolHeaderRegistry(toolFilter), logger, maxMessageBytes: config.maxMessageBytes });
  // The 2024-11-05 HTTP+SSE transport, made only where --transport lets the run use it.
  const sse =
    config.transport === 'streamable-http'
      ? undefined
      : new SseTransport({ config, endpoint, inFlight, router, write, room, logger, redact: options.redact, toolFilter });
  const forwarder: Forwarder = new Forwarder({
    config,
    endpoint,
    legacy,
    modern,
    inFlight,
    router,
    write,
    room,
    logger,
    redact: options.redact,
    toolFilter,
    // Asked only about a refused POST, never on the way of one that works.
    fallback: config.transport === 'auto' ? (pending, body, reply): Promise<boolean> | undefined => choice?.fallback(pending, body, reply) : undefined,
  });
  // --transport auto: the first request chooses (transport-choice.ts); `transport` is then the
  // forwarder or the HTTP+SSE transport itself, so every later message costs what it did before.
  const choice: TransportChoice | undefined =
    config.transport === 'auto' && sse !== undefined
      ? new TransportChoice({
          streamable: forwarder,
          sse,
          logger,
          onChosen: (chosen, name) => {
            transport = chosen;
            logger.debug({ transport: name }, 'transport chosen');
          },
        })
      : undefined;
  let transport: MessageTransport = choice ?? sse ?? forwarder;

  const debug = logger.isLevelEnabled('debug');
  const tasks = new Set<Promise<unknown>>();
  // Woken when a task ends while the reader waits for a free slot (one waiter, not one per task).
  let slotFreed: (() => void) | undefined;
  const track = (task: Promise<unknown>) => {
    // Tasks answer their own failures; one that still rejects is a bug, logged instead of
    // becoming an unhandled rejection that would end the process.
    const settled = task.then(
      () => undefined,
      (error: unknown) => logger.error({ err: error instanceof Error ? error.stack : String(error) }, 'internal error'),
    );
    tasks.add(settled);
    void settled.finally(() => {
      tasks.delete(settled);
      slotFreed?.();
    });
  };
  const waitForSlot = () =>
    new Promise<void>((resolve) => {
      slotFreed = () => {
        slotFreed = undefined;
        resolve();
      };
    });

  const writeAll = async (replies: JsonObject[]): Promise<void> => {
    for (const reply of replies) await writer.write(reply);
  };
  /** Checks one line and hands it on; returns the writing of its error replies, if any. */
  const dispatchLine = (event: LineEvent): Promise<void> | undefined => {
    if (event.kind === 'oversized') {
      logger.warn({ bytes: event.bytes, limit: config.maxLineBytes }, 'line over the limit; skipped');
      return writeAll([
        errorReply(null, -32600, `Invalid Request: the line is longer than ${config.maxLineBytes} bytes`, {
          bridgeCode: 'LINE_TOO_LONG',
          limit: config.maxLineBytes,
          hint: 'raise --max-line-bytes',
        }),
      ]);
    }
    // A large line is checked from its bytes, which are then posted as they came (large-line.ts).
    const line = event.kind === 'large-line' ? checkLargeLine(takePieces(event), event.bytes) : event;
    if (line.kind === 'blank') return undefined;
    if (line.kind === 'not-utf8') {
      logger.warn({ bytes: line.bytes }, 'line is not valid UTF-8; skipped');
      return writeAll([
        errorReply(line.id, -32700, 'Parse error: the line is not valid UTF-8; the stdio transport carries UTF-8 text', {
          bridgeCode: 'PARSE_ERROR',
          hint: 'encode messages as UTF-8',
        }),
      ]);
    }
    let checked = line.kind === 'line' ? checkLine(line.text) : line;
    // The translator rewrites or reads whole what it takes: it gets the whole tree.
    if (checked.kind !== 'rejected' && checked.abridged === true && translator?.readsWhole(checked) === true) checked = wholeMessage(checked);
    if (checked.kind === 'rejected') {
      logger.warn({ reason: checked.reason }, 'line rejected');
      return writeAll(checked.replies);
    }
    if (checked.kind === 'request') {
      // Guarded: the argument object would be built for every message even with debug off.
      if (debug) logger.debug({ method: checked.method, id: toLoggedId(checked.id) }, 'request');
      const progressToken = progressTokenOf(checked.message);
      if (progressToken !== undefined) writer.expectProgress(checked.id, progressToken);
      track(translator?.request(checked) ?? transport.forwardRequest(checked));
    } else {
      track(translator?.other(checked) ?? transport.forwardOther(checked));
    }
    return undefined;
  };

  const joiner = options.terminalInput === true ? new PasteJoiner(config.maxLineBytes) : undefined;
  const dispatchJoined = (joined: Joined): Promise<void> | undefined => {
    if (joined.kind === 'line') return dispatchLine(joined);
    logger.warn({ lines: joined.lines, bytes: joined.bytes }, 'multi-line message over the limit; skipped');
    return writeAll([
      errorReply(
        null,
        -32600,
        `Invalid Request: the message typed over several lines is longer than ${config.maxLineBytes} bytes or ${MAX_JOINED_LINES} lines`,
        {
          bridgeCode: 'LINE_TOO_LONG',
          limit: config.maxLineBytes,
          hint: 'close every { and [ the message opens, or send it on one line (raise --max-line-bytes for a larger one)',
        },
      ),
    ]);
  };
  /** A terminal's lines through the joiner: several may come out of one, or none while a value is open. */
  const dispatchTyped = (event: LineEvent): Promise<void> | undefined => {
    const out: (Joined | LineEvent)[] = event.kind === 'line' ? joiner!.push(event.text) : [...joiner!.flush(), event];
    const writings = out.map((item) => (item.kind === 'too-long' ? dispatchJoined(item) : dispatchLine(item)));
    const pending = writings.filter((writing) => writing !== undefined);
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
  };

  const reading = (async (): Promise<'input-ended' | 'input-failed'> => {
    try {
      await pumpLines(options.input, config.maxLineBytes, (event) => {
        if (options.signal.aborted || writer.closed) return 'stop';
        const writing = joiner === undefined ? dispatchLine(event) : dispatchTyped(event);
        // Stdin back-pressure: past this many messages in flight, or while stdout holds more than
        // its bound unread, stop reading until there is room, so a flood of lines or a client that
        // stopped reading costs a bounded amount of memory.
        if (writing === undefined && tasks.size < MAX_MESSAGES_IN_FLIGHT && !writer.full) return undefined;
        return (async () => {
          if (writing !== undefined) await writing;
          while (tasks.size >= MAX_MESSAGES_IN_FLIGHT) await waitForSlot();
          while (writer.full && !writer.closed) await writer.room();
        })();
      });
      // Ctrl-D in the middle of a value: what was typed goes on, to be answered as it stands.
      for (const held of joiner?.flush() ?? []) await dispatchJoined(held);
      return 'input-ended';
    } catch (error) {
      logger.error({ err: (error as Error).message }, 'reading stdin failed');
      return 'input-failed';
    }
  })();

  const aborted = new Promise<'signal'>((resolve) => {
    if (options.signal.aborted) resolve('signal');
    options.signal.addEventListener('abort', () => resolve('signal'), { once: true });
  });

  let exit: BridgeExit = await Promise.race([reading, aborted, outputGone.then(() => 'output-closed' as const)]);
  // Shutdown has begun, whatever ended the run: the session is kept alive no longer.
  legacy.stopKeepAlive();
  if (exit === 'input-ended') {
    // A pipeline (`printf … | fenbs-mcp`) closes stdin right after writing: finish what is in
    // flight first, each bounded by its deadline: exiting at EOF would lose the answers the pipeline waits for. Listen subscriptions never end
    // on their own, so they are answered as closed.
    inFlight.failListens(new BridgeError('SHUTTING_DOWN', 'stdin closed: the subscription ends with the bridge'));
    translator?.inputEnded(new BridgeError('SHUTTING_DOWN', 'stdin closed: the client can no longer answer the input the server asked for'));
    const drained = Promise.all([...tasks]).then(() => 'drained' as const);
    const stopped = await Promise.race([drained, aborted, outputGone.then(() => 'output-closed' as const)]);
    if (stopped !== 'drained') exit = stopped;
  }
  // Whatever ended the run, no request leaves without its one answer: what is still outstanding
  // (nothing, after a clean drain) is answered here, and its exchange stopped.
  const abandoned = new BridgeError('SHUTTING_DOWN', 'the bridge is shutting down; the request was abandoned');
  await translator?.close(abandoned);
  await inFlight.failAll(abandoned);
  // A response held back a few milliseconds behind its progress is already answered: write it.
  await writer.flushed();
  await legacy.close(config.shutdownGraceMs);
  await sse?.close();
  if (options.credential === undefined) await credential.close?.();
  void dispatcher.destroy().catch(() => undefined);
  return exit;
}
