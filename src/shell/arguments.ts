// Tool and prompt arguments from the command line: `key=value`, `key:=json`, `--args '<json>'` or `--args -`.

import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { acceptsValue } from './schema-check.js';

/** Largest `--args -` read from stdin, in bytes: arguments, not a data transfer. */
export const MAX_STDIN_ARGS_BYTES = 16 * 1024 * 1024;

/** A mistake in the arguments: reported before anything is sent, exit code 2. */
export class ArgumentError extends Error {
  override readonly name = 'ArgumentError';
  constructor(
    message: string,
    readonly fix?: string,
  ) {
    super(message);
  }
}

/** One `key=value` word: the value as JSON when it parses (or when `:=` forces it), the text kept for the schema. */
export interface Assignment {
  key: string;
  value: unknown;
  /** The text after `=`; undefined for `key:=json`, whose value is JSON whatever the schema says. */
  text: string | undefined;
}

/** Parses `key=value` and `key:=json` words. */
export function parseAssignments(words: readonly string[]): Assignment[] {
  return words.map((word) => {
    const equals = word.indexOf('=');
    if (equals <= 0 || (equals === 1 && word[0] === ':')) {
      throw new ArgumentError(`"${word}" is not an argument: write key=value (or key:=json for a JSON value)`, 'fenbs-mcp call <tool> name=value count:=5');
    }
    const forced = word[equals - 1] === ':';
    const key = word.slice(0, forced ? equals - 1 : equals);
    const text = word.slice(equals + 1);
    if (forced) {
      try {
        return { key, value: JSON.parse(text) as unknown, text: undefined };
      } catch {
        throw new ArgumentError(`${key}:= needs a JSON value, and ${JSON.stringify(text)} is not JSON`, `${key}=${text} passes it as a string`);
      }
    }
    return { key, value: parseLoosely(text), text };
  });
}

function parseLoosely(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The object given with `--args` (from where says `source`: the option or stdin). */
export function parseArgsObject(text: string, source: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ArgumentError(`${source} is not JSON: ${(error as Error).message}`, `--args '{"key": "value"}'`);
  }
  if (!isJsonObject(parsed))
    throw new ArgumentError(
      `${source} must be a JSON object of arguments, not ${parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : typeof parsed}`,
      `--args '{"key": "value"}'`,
    );
  return parsed;
}

/**
 * `--args` first, then each `key=value` over it. A loose value that parsed as JSON but does not fit
 * the property's schema while its text does (`ref=123` for a string) is sent as the text: people
 * type `ref=123` meaning the string.
 */
export function buildArguments(base: JsonObject, assignments: readonly Assignment[], schema: unknown): JsonObject {
  const properties = isJsonObject(schema) && isJsonObject(schema.properties) ? schema.properties : {};
  const args: JsonObject = { ...base };
  for (const { key, value, text } of assignments) {
    const property = properties[key];
    args[key] = text !== undefined && value !== text && property !== undefined && !acceptsValue(property, value) && acceptsValue(property, text) ? text : value;
  }
  return args;
}

/** Reads a stream to its end as UTF-8 (`--args -`), refusing more than `maxBytes`. */
export async function readAll(stream: AsyncIterable<Buffer | string>, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    size += bytes.length;
    if (size > maxBytes) throw new ArgumentError(`the arguments on stdin are larger than ${maxBytes} bytes`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
}
