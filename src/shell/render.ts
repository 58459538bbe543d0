// What shell commands print for people: one line per tool, resource or prompt; a result's text, other content summarized.

import { DEEPER, MAX_SHOWN_DEPTH, shownWithin } from './json-text.js';
import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { shorten, toTerminalLine, toTerminalText } from '../core/terminal-text.js';

/** Longest name column before the descriptions stop lining up, in characters. */
export const MAX_NAME_COLUMN_CHARS = 32;
/** Longest one-line summary of a title or description, in characters. */
export const MAX_SUMMARY_CHARS = 120;
/** Longest name or URI a list shows, in characters: a server can send a megabyte of name; --json shows it whole. */
export const MAX_NAME_CHARS = 256;
/** Longest text after a name (summary, media type, argument names) and longest field in a bracketed line, in characters. */
export const MAX_DETAIL_CHARS = 512;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

/**
 * A server's string as one line of at most `maxChars` characters before escapes, every control
 * character shown (CWE-150: a title could set the window title, write the clipboard, clear the
 * screen). Cut before it is escaped, so an escape adds at most a few characters per character kept.
 */
function oneLine(value: unknown, maxChars: number = MAX_DETAIL_CHARS): string {
  return toTerminalLine(shorten(String(value), maxChars));
}

/** The first sentence of a description, on one line, shortened to MAX_SUMMARY_CHARS. */
export function firstSentence(description: string): string {
  const flat = description.replace(/\s+/g, ' ').trim();
  const end = /[.!?](\s|$)/.exec(flat);
  return shorten(end === null ? flat : flat.slice(0, end.index + 1), MAX_SUMMARY_CHARS);
}

/** A title (or annotations.title), else the first sentence of the description, shortened to MAX_SUMMARY_CHARS. */
function summaryOf(item: JsonObject): string {
  const annotations = isJsonObject(item.annotations) ? item.annotations : {};
  const title = text(item.title) ?? text(annotations.title);
  if (title !== undefined) return shorten(title, MAX_SUMMARY_CHARS);
  const description = text(item.description);
  return description === undefined ? '' : firstSentence(description);
}

/**
 * Rows of `name  summary`, the names padded to one column. Every cell is the server's text: each is
 * bounded and escaped here, before the column is measured, so one row is one line of known length.
 */
function table(rows: [string, string][]): string {
  const cells = rows.map(([name, summary]) => [oneLine(name, MAX_NAME_CHARS), oneLine(summary)] as const);
  // A loop, not Math.max(...): a list of a million tools would pass a million arguments.
  const width = cells.reduce((widest, [name]) => Math.max(widest, Math.min(MAX_NAME_COLUMN_CHARS, name.length)), 0);
  return cells.map(([name, summary]) => (summary === '' ? name : `${name.padEnd(width)}  ${summary}`)).join('\n');
}

export function renderTools(tools: JsonObject[]): string {
  return table(
    tools.map((tool) => {
      const schema = isJsonObject(tool.inputSchema) ? tool.inputSchema : {};
      const required = Array.isArray(schema.required) ? schema.required : [];
      const names = Object.keys(isJsonObject(schema.properties) ? schema.properties : {});
      return [
        String(tool.name),
        withArguments(
          summaryOf(tool),
          names.map((name) => `${name}${required.includes(name) ? '*' : ''}`),
        ),
      ];
    }),
  );
}

/** Argument names a list line shows before it says how many more there are. */
export const MAX_LISTED_ARGUMENTS = 12;

/** A summary followed by the argument names (a required one marked *), as `tools` and `prompts` show them. */
function withArguments(summary: string, names: string[]): string {
  if (names.length === 0) return summary;
  const shown = names.slice(0, MAX_LISTED_ARGUMENTS).join(', ');
  const more = names.length > MAX_LISTED_ARGUMENTS ? `, +${names.length - MAX_LISTED_ARGUMENTS} more` : '';
  return `${summary} (arguments: ${shown}${more})`.trim();
}

export function renderResources(resources: JsonObject[]): string {
  return table(
    resources.map((resource) => {
      const mime = text(resource.mimeType);
      const summary = summaryOf(resource) || (text(resource.name) ?? '');
      return [String(resource.uri), mime === undefined ? summary : `${summary} (${mime})`.trim()];
    }),
  );
}

export function renderPrompts(prompts: JsonObject[]): string {
  return table(
    prompts.map((prompt) => {
      const args = Array.isArray(prompt.arguments)
        ? prompt.arguments.filter(isJsonObject).map((arg) => `${String(arg.name)}${arg.required === true ? '*' : ''}`)
        : [];
      return [String(prompt.name), withArguments(summaryOf(prompt), args)];
    }),
  );
}

/**
 * One content block (2025-06-18 schema ContentBlock): text with its line feeds and tabs, every other
 * control shown; anything else as one bracketed line whose every field is one line.
 */
function renderContent(block: unknown): string {
  if (!isJsonObject(block)) return '[content that is not an object]';
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? toTerminalText(block.text) : '';
    case 'image':
    case 'audio':
      return `[${block.type} ${oneLine(text(block.mimeType) ?? 'of unknown type')}, ${sizeOfBase64(block.data)}]`;
    case 'resource_link':
      return `[link ${oneLine(block.uri)}${text(block.name) === undefined ? '' : ` (${oneLine(block.name)})`}]`;
    case 'resource': {
      const resource = isJsonObject(block.resource) ? block.resource : {};
      return renderResourceContents(resource);
    }
    default:
      return `[${oneLine(block.type)} content]`;
  }
}

/** One entry of `resources/read` contents, or an embedded resource: its text, or a line for a blob. */
function renderResourceContents(contents: JsonObject): string {
  if (typeof contents.text === 'string') return toTerminalText(contents.text);
  const mime = text(contents.mimeType) ?? 'binary';
  return `[${oneLine(mime)} ${oneLine(contents.uri)}, ${sizeOfBase64(contents.blob)}; --json shows the data]`;
}

function sizeOfBase64(data: unknown): string {
  if (typeof data !== 'string') return 'no data';
  const bytes = Buffer.byteLength(data, 'base64');
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** A tools/call result: its content blocks, or its structuredContent when it has no content. */
export function renderCallResult(result: JsonObject): string {
  const content = Array.isArray(result.content) ? result.content : [];
  // JSON escapes C0 controls but leaves C1, separators and bidi controls as they are.
  if (content.length === 0 && result.structuredContent !== undefined) {
    const { shown, cut } = shownWithin(result.structuredContent);
    const note = cut ? `\n(nested deeper than ${MAX_SHOWN_DEPTH} levels: the deeper parts are shown as ${DEEPER}; --json prints all of it)` : '';
    return `${toTerminalText(JSON.stringify(shown, null, 2))}${note}`;
  }
  return content.map(renderContent).join('\n');
}

export function renderReadResult(result: JsonObject): string {
  const contents = Array.isArray(result.contents) ? result.contents.filter(isJsonObject) : [];
  return contents.map(renderResourceContents).join('\n');
}

/** A prompts/get result: each message as `role: content`. */
export function renderPromptResult(result: JsonObject): string {
  const messages = Array.isArray(result.messages) ? result.messages.filter(isJsonObject) : [];
  return messages.map((message) => `${oneLine(message.role)}: ${renderContent(message.content)}`).join('\n\n');
}
