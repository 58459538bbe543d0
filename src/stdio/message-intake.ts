// stdin lines → checked JSON-RPC messages handed on, a bad line answered with its error reply, stdin paused while the run is full.

import type { Readable } from 'node:stream';
import { checkLine, errorReply, type IncomingMessage, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import { checkLargeLine, wholeMessage } from './large-line.js';
import { pumpLines, takePieces, type LineEvent } from './line-reader.js';
import { MAX_JOINED_LINES, PasteJoiner, type Joined } from './paste-joiner.js';

export interface IntakeOptions {
  input: Readable;
  maxLineBytes: number;
  logger: Logger;
  /** Each checked message, in stdin order. */
  take: (message: IncomingMessage) => void;
  /** True when this message is to be handed on parsed whole rather than as a large line's bytes (the era translator reads it). */
  readsWhole: (message: IncomingMessage) => boolean;
  /** Writes the bridge's own error replies to a bad line. */
  reply: (message: JsonObject) => Promise<unknown>;
  /** Resolves when stdin may be read again; undefined when it may be read now (back-pressure). */
  room: () => Promise<void> | undefined;
  /** True when reading is to stop (a signal, stdout gone). */
  stopped: () => boolean;
  /**
   * stdin is a terminal, where a person types or pastes: a JSON value spread over several lines
   * (pretty-printed) is joined into one message (paste-joiner.ts). Never for a pipe, where one
   * message per line holds strictly.
   */
  terminalInput: boolean;
}

/**
 * Reads stdin to its end: every line checked and handed on, or answered. Resolves 'input-ended' at
 * EOF (what a person typed across lines is handed on as it stands), 'input-failed' when reading
 * failed.
 */
export async function readMessages(options: IntakeOptions): Promise<'input-ended' | 'input-failed'> {
  const { logger, maxLineBytes } = options;
  const replyAll = async (replies: JsonObject[]): Promise<void> => {
    for (const reply of replies) await options.reply(reply);
  };
  /** Checks one line and hands it on; returns the writing of its error replies, if any. */
  const takeLine = (event: LineEvent): Promise<void> | undefined => {
    if (event.kind === 'oversized') {
      logger.warn({ bytes: event.bytes, limit: maxLineBytes }, 'line over the limit; skipped');
      // Under its id when its first bytes held it: the client waits for that id, not for null.
      return replyAll([
        errorReply(event.id ?? null, -32600, `Invalid Request: the line is longer than ${maxLineBytes} bytes`, {
          bridgeCode: 'LINE_TOO_LONG',
          limit: maxLineBytes,
          hint: 'raise --max-line-bytes',
        }),
      ]);
    }
    // A large line is checked from its bytes, which are then posted as they came (large-line.ts).
    const line = event.kind === 'large-line' ? checkLargeLine(takePieces(event), event.bytes) : event;
    if (line.kind === 'blank') return undefined;
    if (line.kind === 'not-utf8') {
      logger.warn({ bytes: line.bytes }, 'line is not valid UTF-8; skipped');
      return replyAll([
        errorReply(line.id, -32700, 'Parse error: the line is not valid UTF-8; the stdio transport carries UTF-8 text', {
          bridgeCode: 'PARSE_ERROR',
          hint: 'encode messages as UTF-8',
        }),
      ]);
    }
    let checked = line.kind === 'line' ? checkLine(line.text) : line;
    if (checked.kind !== 'rejected' && checked.abridged === true && options.readsWhole(checked)) checked = wholeMessage(checked);
    if (checked.kind === 'rejected') {
      logger.warn({ reason: checked.reason }, 'line rejected');
      return replyAll(checked.replies);
    }
    options.take(checked);
    return undefined;
  };

  const joiner = options.terminalInput ? new PasteJoiner(maxLineBytes) : undefined;
  const takeJoined = (joined: Joined): Promise<void> | undefined => {
    if (joined.kind === 'line') return takeLine(joined);
    logger.warn({ lines: joined.lines, bytes: joined.bytes }, 'multi-line message over the limit; skipped');
    return replyAll([
      errorReply(null, -32600, `Invalid Request: the message typed over several lines is longer than ${maxLineBytes} bytes or ${MAX_JOINED_LINES} lines`, {
        bridgeCode: 'LINE_TOO_LONG',
        limit: maxLineBytes,
        hint: 'close every { and [ the message opens, or send it on one line (raise --max-line-bytes for a larger one)',
      }),
    ]);
  };
  /** A terminal's lines through the joiner: several may come out of one, or none while a value is open. */
  const takeTyped = (event: LineEvent): Promise<void> | undefined => {
    const out: (Joined | LineEvent)[] = event.kind === 'line' ? joiner!.push(event.text) : [...joiner!.flush(), event];
    const writings = out.map((item) => (item.kind === 'too-long' ? takeJoined(item) : takeLine(item)));
    const pending = writings.filter((writing) => writing !== undefined);
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
  };

  try {
    await pumpLines(options.input, maxLineBytes, (event) => {
      if (options.stopped()) return 'stop';
      const writing = joiner === undefined ? takeLine(event) : takeTyped(event);
      const room = options.room();
      if (writing === undefined && room === undefined) return undefined;
      return (async () => {
        if (writing !== undefined) await writing;
        // Asked again after the replies are written: room is whatever there is now.
        for (let wait = options.room(); wait !== undefined; wait = options.room()) await wait;
      })();
    });
    // Ctrl-D in the middle of a value: what was typed goes on, to be answered as it stands.
    for (const held of joiner?.flush() ?? []) await takeJoined(held);
    return 'input-ended';
  } catch (error) {
    logger.error({ err: (error as Error).message }, 'reading stdin failed');
    return 'input-failed';
  }
}
