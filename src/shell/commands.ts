// The shell commands (tools, call, resources, read, prompts, prompt): connect, ask, print, and the exit code.

import type { Writable } from 'node:stream';
import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { MAX_MESSAGE_CHARS, shorten, toTerminalJson, toTerminalLine } from '../core/terminal-text.js';
import { ArgumentError, buildArguments, parseArgsObject, parseAssignments, type Assignment } from './arguments.js';
import { Interrupted, RpcError, ShellClient, STILL_WAITING_MS, type ClientOptions } from './client.js';
import { nearestWord } from '../core/nearest-word.js';
import { toFailureJson, type ShellFailure } from './failure-json.js';
import { createProgressView, type ProgressTarget } from './progress.js';
import { renderCallResult, renderPromptResult, renderPrompts, renderReadResult, renderResources, renderTools, MAX_NAME_CHARS } from './render.js';
import { checkArguments } from './schema-check.js';
import { jsonText } from './json-text.js';
import { toolFilterRefusal } from '../bridge.js';
import { maskUrl } from '../logging/redactor.js';

/** Exit codes of shell commands: the numbers of EXIT in cli/exit-codes.ts. */
export const SHELL_EXIT = {
  OK: 0,
  /** The tool said isError, or the server answered with a JSON-RPC error. */
  FAILED: 1,
  /** A usage mistake (a missing or wrong argument, an unknown tool); nothing was called. */
  USAGE: 2,
  /** The server could not be reached or did not answer usably: what `doctor` reports as a failed check. */
  UNREACHABLE: 3,
  /** Ctrl-C: the request was cancelled. */
  INTERRUPTED: 130,
} as const;

/** Bridge codes that say the server was not reached at all (nothing listening, DNS, TLS, the proxy). */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['REMOTE_UNREACHABLE', 'REMOTE_TLS', 'PROXY_FAILED']);

/** Bridge codes about the credential, not the request that met them: said without naming the request. */
const NOT_ABOUT_THE_REQUEST: ReadonlySet<string> = new Set(['TOKEN_COMMAND_FAILED', 'AUTH_REQUIRED']);

/**
 * Each request a command makes, in the words of the person who ran it: they asked to list the
 * tools, not for server/discover. `doing` leads a line, `noun` stands for the method in a message.
 */
const AS_ASKED: Readonly<Record<string, { doing: string; noun: string }>> = {
  'server/discover': { doing: 'connecting to the server', noun: 'the connection' },
  initialize: { doing: 'connecting to the server', noun: 'the connection' },
  'tools/list': { doing: 'listing the tools', noun: 'the tool list' },
  'resources/list': { doing: 'listing the resources', noun: 'the resource list' },
  'prompts/list': { doing: 'listing the prompts', noun: 'the prompt list' },
  'tools/call': { doing: 'calling the tool', noun: 'the call' },
  'prompts/get': { doing: 'getting the prompt', noun: 'the prompt' },
  'resources/read': { doing: 'reading the resource', noun: 'the read' },
};

/** What the command was doing when it sent `method`. */
function doing(method: string): string {
  return AS_ASKED[method]?.doing ?? method;
}

/** A message about `method` with the method named as the person knows it. */
function asAsked(text: string, method: string): string {
  const words = AS_ASKED[method];
  return words === undefined ? text : text.split(method).join(words.noun);
}

/** Pages of a list followed through `nextCursor` before the command stops and says so. */
export const MAX_LIST_PAGES = 100;

export type ShellCommand =
  | { kind: 'tools' }
  | { kind: 'resources' }
  | { kind: 'prompts' }
  | { kind: 'read'; uri: string }
  | { kind: 'call' | 'prompt'; name: string; assignments: readonly string[]; args?: string | undefined };

/** The arguments as given: `--args` and the `key=value` words, parsed but not yet fitted to a schema. */
interface Given {
  base: JsonObject;
  assignments: Assignment[];
}

export interface ShellIo {
  stdout: Writable;
  stderr: ProgressTarget;
  /** Reads all of stdin, for `--args -`. */
  readStdin: () => Promise<string>;
  /** Print results as JSON for scripts. */
  json: boolean;
  /** Aborted by Ctrl-C. */
  interrupt: AbortSignal;
}

/**
 * What a command tells the person on stderr, one line per call: `say` a message, `note` an indented
 * detail under it. Every line passes the terminal sanitiser here, whatever server text it quotes (a
 * tool name, an error message, a hint), so no server string can move the cursor, set the title or
 * start a line of its own (CWE-150).
 */
interface Messages {
  say: (line: string) => void;
  note: (line: string) => void;
}

function messagesOn(stderr: ProgressTarget): Messages {
  const write = (prefix: string, line: string) => void stderr.write(`${prefix}${toTerminalLine(shorten(line, MAX_MESSAGE_CHARS))}\n`);
  return { say: (line) => write('fenbs-mcp: ', line), note: (line) => write('  ', line) };
}

/** With --json, the failure as the one JSON object on stdout; nothing otherwise. */
async function printFailure(io: ShellIo, failure: ShellFailure): Promise<void> {
  if (io.json) await print(io, toFailureJson(failure));
}

/** Runs one shell command through an in-process bridge; resolves with the exit code. */
export async function runShellCommand(command: ShellCommand, client: ClientOptions, io: ShellIo): Promise<number> {
  const messages = messagesOn(io.stderr);
  const { say, note } = messages;
  // Arguments are checked before a connection is made: a typo costs nothing on the server.
  let given: Given | undefined;
  if (command.kind === 'call' || command.kind === 'prompt') {
    try {
      const base =
        command.args === undefined
          ? {}
          : parseArgsObject(command.args === '-' ? await io.readStdin() : command.args, command.args === '-' ? 'the arguments on stdin' : '--args');
      given = { base, assignments: parseAssignments(command.assignments) };
    } catch (error) {
      if (!(error instanceof ArgumentError)) throw error;
      return usageFailure(messages, io, error);
    }
  }
  if (io.interrupt.aborted) {
    await printFailure(io, { code: 'INTERRUPTED', message: 'interrupted before anything was sent' });
    return SHELL_EXIT.INTERRUPTED;
  }
  // Warnings about the user's own settings (a credential set but not used, a tool filter that
  // matches nothing) are the command's own lines, printed once, whatever the log level.
  const deadline = client.config.requestTimeoutMs === 0 ? 'waits without a deadline' : `gives up after ${Math.round(client.config.requestTimeoutMs / 1000)} s`;
  const connection = new ShellClient({
    ...client,
    warn: (text) => say(`warning: ${text}`),
    onStillWaiting: (method) =>
      say(
        `still waiting for the server (${doing(method)}, ${STILL_WAITING_MS / 1000} s so far); it ${deadline} (--request-timeout <ms> to change, Ctrl-C to stop)`,
      ),
  });
  // A reader of stdout that goes away early is no failure of the command: its EPIPE is not thrown.
  const ignore = () => undefined;
  io.stdout.on('error', ignore);
  try {
    await connection.open(io.interrupt);
    switch (command.kind) {
      case 'tools':
        return await printList(connection, io, 'tools/list', 'tools', renderTools, say);
      case 'resources':
        return await printList(connection, io, 'resources/list', 'resources', renderResources, say);
      case 'prompts':
        return await printList(connection, io, 'prompts/list', 'prompts', renderPrompts, say);
      case 'read':
        return await readResource(connection, command.uri, io, say);
      case 'prompt':
        return await getPrompt(connection, command.name, given!, io, messages);
      case 'call':
        return await callTool(connection, command.name, given!, io, client, messages);
    }
  } catch (error) {
    if (error instanceof Interrupted) {
      const message = `interrupted while ${doing(error.method)}${error.sent ? '' : ': nothing was sent'}`;
      say(message);
      await printFailure(io, { code: 'INTERRUPTED', message });
      return SHELL_EXIT.INTERRUPTED;
    }
    if (error instanceof ArgumentError) return usageFailure(messages, io, error);
    if (!(error instanceof RpcError)) throw error;
    if (error.bridgeCode !== undefined && error.bridgeCode !== 'METHOD_NOT_FOUND') {
      // The bridge's own words name the protocol method; the server's words are quoted as they came.
      const text = asAsked(error.message, error.method);
      // Where nothing could be reached, say so of the server, not of whichever request went first;
      // otherwise say what was being done, unless the message already names it.
      const lead = UNREACHABLE_CODES.has(error.bridgeCode)
        ? `cannot reach ${maskUrl(client.config.url)}: `
        : text !== error.message || NOT_ABOUT_THE_REQUEST.has(error.bridgeCode)
          ? ''
          : `${doing(error.method)}: `;
      say(`${lead}${text}`);
      const hint = error.hint?.startsWith(`${error.message}: `) === true ? error.hint.slice(error.message.length + 2) : error.hint;
      if (hint !== undefined) note(`hint: ${hint}`);
      note('fenbs-mcp doctor (with the same options) checks the connection step by step');
      await printFailure(io, { code: error.bridgeCode, message: `${lead}${text}`, hint });
      return SHELL_EXIT.UNREACHABLE;
    }
    const message = `${doing(error.method)} failed: ${error.message} (JSON-RPC error ${error.code})`;
    say(message);
    if (error.suggestion !== undefined) note(error.suggestion);
    await printFailure(io, { code: 'JSON_RPC_ERROR', message, rpcCode: error.code, hint: error.suggestion });
    return SHELL_EXIT.FAILED;
  } finally {
    await connection.close();
    io.stdout.off('error', ignore);
  }
}

async function usageFailure({ say, note }: Messages, io: ShellIo, error: ArgumentError): Promise<number> {
  say(error.message);
  if (error.fix !== undefined) note(`try: ${error.fix}`);
  await printFailure(io, { code: 'USAGE', message: error.message, hint: error.fix === undefined ? undefined : `try: ${error.fix}` });
  return SHELL_EXIT.USAGE;
}

async function print(io: ShellIo, text: string): Promise<void> {
  if (text === '' || io.stdout.destroyed) return;
  // --json to a terminal: JSON leaves C1 and bidi controls raw, and a terminal obeys them.
  const shown = io.json && (io.stdout as { isTTY?: boolean }).isTTY === true ? toTerminalJson(text) : text;
  const line = shown.endsWith('\n') ? shown : `${shown}\n`;
  // Back-pressure: a slow reader of stdout (a pager) is waited for, not buffered without bound; a
  // reader that went away (`| head -1`, EPIPE) ends the wait, and the error, which is not ours to report.
  if (io.stdout.write(line)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      io.stdout.off('drain', done).off('close', done).off('error', done);
      resolve();
    };
    io.stdout.on('drain', done).on('close', done).on('error', done);
  });
}

/** Every page of a list (2025-06-18 server/utilities §Pagination), bounded by MAX_LIST_PAGES. */
async function listAll(connection: ShellClient, method: string, key: string, io: ShellIo, say: (line: string) => void): Promise<JsonObject[]> {
  const items: JsonObject[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const result = await connection.request(method, cursor === undefined ? {} : { cursor }, { signal: io.interrupt });
    const list = result[key];
    if (Array.isArray(list)) items.push(...list.filter(isJsonObject));
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) return items;
  }
  say(`${doing(method)}: stopped after ${MAX_LIST_PAGES} pages; the server still offered more (nextCursor)`);
  return items;
}

async function printList(
  connection: ShellClient,
  io: ShellIo,
  method: string,
  key: string,
  render: (items: JsonObject[]) => string,
  say: (line: string) => void,
): Promise<number> {
  const items = await listAll(connection, method, key, io, say);
  await print(io, io.json ? jsonText(items) : render(items));
  return SHELL_EXIT.OK;
}

async function callTool(connection: ShellClient, name: string, given: Given, io: ShellIo, client: ClientOptions, { say, note }: Messages): Promise<number> {
  const tools = await listAll(connection, 'tools/list', 'tools', io, say);
  const tool = tools.find((candidate) => candidate.name === name);
  // A tool the filters hide is not in the list the bridge hands on: said as the bridge says it.
  const hidden = tool === undefined ? toolFilterRefusal(client.config, name) : undefined;
  if (hidden !== undefined) {
    say(hidden.message);
    const hint = typeof hidden.context.hint === 'string' ? hidden.context.hint : undefined;
    if (hint !== undefined) note(`hint: ${hint}`);
    note('nothing was sent');
    await printFailure(io, { code: 'USAGE', message: `${hidden.message}; nothing was sent`, hint });
    return SHELL_EXIT.USAGE;
  }
  if (tool === undefined) {
    const names = tools.map((candidate) => shorten(String(candidate.name), MAX_NAME_CHARS));
    throw new ArgumentError(
      `the server has no tool "${name}"${names.length === 0 ? '' : `; it has: ${names.join(', ')}`}`,
      'fenbs-mcp tools (with the same options) lists them',
    );
  }
  const args = buildArguments(given.base, given.assignments, tool.inputSchema);
  const report = checkArguments(tool.inputSchema, args);
  if (report.errors.length > 0) {
    // Nothing goes: the warnings are said as what they are, not as something "sent anyway".
    for (const error of report.errors) say(`${name}: ${error}`);
    for (const warning of report.warnings) say(`${name}: ${warning}`);
    note(`${name} takes: ${describeParameters(tool.inputSchema)}`);
    note('nothing was sent');
    await printFailure(io, {
      code: 'USAGE',
      message: `${name}: ${report.errors.join('; ')}; nothing was sent`,
      hint: `${name} takes: ${describeParameters(tool.inputSchema)}`,
    });
    return SHELL_EXIT.USAGE;
  }
  for (const warning of report.warnings) say(`${name}: ${warning}; sent anyway`);
  const progress = createProgressView(io.stderr, client.progressLogger ?? client.logger);
  let result: JsonObject;
  try {
    result = await connection.request('tools/call', { name, arguments: args }, { signal: io.interrupt, onProgress: (update) => progress.update(update) });
  } finally {
    progress.clear();
  }
  if (result.resultType === 'input_required') {
    // 2026-07-28 MRTR: the server needs an answer (elicitation, sampling) a shell command cannot give.
    say(
      `${name} asks for input (${Object.keys(isJsonObject(result.inputRequests) ? result.inputRequests : {}).join(', ') || 'a follow-up request'}), which shell commands cannot answer; use an MCP client`,
    );
    if (io.json) await print(io, jsonText(result));
    return SHELL_EXIT.FAILED;
  }
  const failed = result.isError === true;
  if (io.json) {
    await print(io, jsonText(result));
  } else if (failed) {
    say(`${name} reported an error:`);
    // The result's text, escaped by the renderer as on stdout.
    io.stderr.write(`${renderCallResult(result)}\n`);
  } else {
    await print(io, renderCallResult(result));
  }
  return failed ? SHELL_EXIT.FAILED : SHELL_EXIT.OK;
}

/**
 * resources/read. A URI need not be in resources/list (templates, 2025-06-18 server/resources
 * §Resource Templates), so it is sent as given; when the server refuses it, the listed URI nearest
 * to it is suggested, as `prompt` suggests names.
 */
async function readResource(connection: ShellClient, uri: string, io: ShellIo, say: (line: string) => void): Promise<number> {
  let result: JsonObject;
  try {
    result = await connection.request('resources/read', { uri }, { signal: io.interrupt });
  } catch (error) {
    if (error instanceof RpcError && error.bridgeCode === undefined) error.suggestion = await nearestResource(connection, uri, io, say);
    throw error;
  }
  await print(io, io.json ? jsonText(result) : renderReadResult(result));
  return SHELL_EXIT.OK;
}

/** Edits a mistyped URI may be from the one meant: a quarter of its length, at least two. */
function maxUriEdits(uri: string): number {
  return Math.max(2, Math.floor(uri.length / 4));
}

/** "did you mean <uri>?" for the listed resource nearest to `uri`, or what the server has; undefined when listing fails too. */
async function nearestResource(connection: ShellClient, uri: string, io: ShellIo, say: (line: string) => void): Promise<string | undefined> {
  let uris: string[];
  try {
    uris = (await listAll(connection, 'resources/list', 'resources', io, say)).map((resource) => String(resource.uri));
  } catch {
    return undefined;
  }
  const near = nearestWord(uri, uris, maxUriEdits(uri));
  if (near !== undefined) return `did you mean ${shorten(near, MAX_NAME_CHARS)}?`;
  if (uris.length === 0) return undefined;
  const shown = uris.slice(0, MAX_SUGGESTED_URIS).map((listed) => shorten(listed, MAX_NAME_CHARS));
  return `the server lists: ${shown.join(', ')}${uris.length > shown.length ? `, +${uris.length - shown.length} more (fenbs-mcp resources)` : ''}`;
}

/** Listed URIs named when none is near the one asked for. */
const MAX_SUGGESTED_URIS = 5;

/** prompts/get: prompt arguments are strings (2025-06-18 server/prompts §Getting a Prompt), checked against prompts/list first. */
async function getPrompt(connection: ShellClient, name: string, given: Given, io: ShellIo, { say, note }: Messages): Promise<number> {
  const prompts = await listAll(connection, 'prompts/list', 'prompts', io, say);
  const prompt = prompts.find((candidate) => candidate.name === name);
  if (prompt === undefined) {
    const names = prompts.map((candidate) => shorten(String(candidate.name), MAX_NAME_CHARS));
    throw new ArgumentError(
      `the server has no prompt "${name}"${names.length === 0 ? '' : `; it has: ${names.join(', ')}`}`,
      'fenbs-mcp prompts (with the same options) lists them',
    );
  }
  const args: Record<string, string> = {};
  for (const [key, value] of Object.entries(given.base)) args[key] = typeof value === 'string' ? value : JSON.stringify(value);
  for (const { key, value, text } of given.assignments) args[key] = text ?? (typeof value === 'string' ? value : JSON.stringify(value));
  const declared = Array.isArray(prompt.arguments) ? prompt.arguments.filter(isJsonObject) : [];
  const missing = declared.filter((arg) => arg.required === true && args[String(arg.name)] === undefined).map((arg) => String(arg.name));
  if (missing.length > 0) {
    for (const argument of missing) say(`${name}: missing required argument "${argument}"`);
    const takes = `${name} takes: ${declared.map((arg) => `${String(arg.name)}${arg.required === true ? ' (required)' : ''}`).join(', ')}`;
    note(takes);
    note('nothing was sent');
    await printFailure(io, {
      code: 'USAGE',
      message: `${name}: missing required ${missing.map((argument) => `"${argument}"`).join(', ')}; nothing was sent`,
      hint: takes,
    });
    return SHELL_EXIT.USAGE;
  }
  const result = await connection.request('prompts/get', { name, arguments: args }, { signal: io.interrupt });
  await print(io, io.json ? jsonText(result) : renderPromptResult(result));
  return SHELL_EXIT.OK;
}

/** `ref (string, required), status (string)`: what the usage message lists. */
function describeParameters(schema: unknown): string {
  const properties = isJsonObject(schema) && isJsonObject(schema.properties) ? schema.properties : {};
  const required = isJsonObject(schema) && Array.isArray(schema.required) ? schema.required : [];
  const names = Object.keys(properties);
  if (names.length === 0) return 'no arguments';
  return names
    .map((key) => {
      const property = properties[key];
      const type = isJsonObject(property) && (typeof property.type === 'string' || Array.isArray(property.type)) ? [property.type].flat().join('|') : 'any';
      return `${key} (${type}${required.includes(key) ? ', required' : ''})`;
    })
    .join(', ');
}
