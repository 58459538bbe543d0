// What shell commands print for people: one line per tool, resource or prompt; a result's text, other content summarized.

import { isJsonObject, type JsonObject } from '../json-rpc.js';

/** Longest name column before the descriptions stop lining up, in characters. */
export const MAX_NAME_COLUMN_CHARS = 32;
/** Longest one-line summary of a description, in characters. */
export const MAX_SUMMARY_CHARS = 120;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

/** The first sentence of a description, on one line, shortened to MAX_SUMMARY_CHARS. */
export function firstSentence(description: string): string {
  const flat = description.replace(/\s+/g, ' ').trim();
  const end = /[.!?](\s|$)/.exec(flat);
  const sentence = end === null ? flat : flat.slice(0, end.index + 1);
  return sentence.length <= MAX_SUMMARY_CHARS ? sentence : `${sentence.slice(0, MAX_SUMMARY_CHARS - 1)}…`;
}

/** A title (or annotations.title), else the first sentence of the description. */
function summaryOf(item: JsonObject): string {
  const annotations = isJsonObject(item.annotations) ? item.annotations : {};
  const title = text(item.title) ?? text(annotations.title);
  if (title !== undefined) return title;
  const description = text(item.description);
  return description === undefined ? '' : firstSentence(description);
}

/** Rows of `name  summary`, the names padded to one column. */
function table(rows: [string, string][]): string {
  const width = Math.min(MAX_NAME_COLUMN_CHARS, Math.max(0, ...rows.map(([name]) => name.length)));
  return rows.map(([name, summary]) => (summary === '' ? name : `${name.padEnd(width)}  ${summary}`)).join('\n');
}

export function renderTools(tools: JsonObject[]): string {
  return table(tools.map((tool) => [String(tool.name), summaryOf(tool)]));
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
      const args = Array.isArray(prompt.arguments) ? prompt.arguments.filter(isJsonObject).map((arg) => `${String(arg.name)}${arg.required === true ? '*' : ''}`) : [];
      const summary = summaryOf(prompt);
      return [String(prompt.name), args.length === 0 ? summary : `${summary} (arguments: ${args.join(', ')})`.trim()];
    }),
  );
}

/** One content block (2025-06-18 schema ContentBlock): text as it is, anything else as one bracketed line. */
function renderContent(block: unknown): string {
  if (!isJsonObject(block)) return '[content that is not an object]';
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio':
      return `[${block.type} ${text(block.mimeType) ?? 'of unknown type'}, ${sizeOfBase64(block.data)}]`;
    case 'resource_link':
      return `[link ${String(block.uri)}${text(block.name) === undefined ? '' : ` (${String(block.name)})`}]`;
    case 'resource': {
      const resource = isJsonObject(block.resource) ? block.resource : {};
      return renderResourceContents(resource);
    }
    default:
      return `[${String(block.type)} content]`;
  }
}

/** One entry of `resources/read` contents, or an embedded resource: its text, or a line for a blob. */
function renderResourceContents(contents: JsonObject): string {
  if (typeof contents.text === 'string') return contents.text;
  const mime = text(contents.mimeType) ?? 'binary';
  return `[${mime} ${String(contents.uri)}, ${sizeOfBase64(contents.blob)}; --json shows the data]`;
}

function sizeOfBase64(data: unknown): string {
  if (typeof data !== 'string') return 'no data';
  const bytes = Buffer.byteLength(data, 'base64');
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** A tools/call result: its content blocks, or its structuredContent when it has no content. */
export function renderCallResult(result: JsonObject): string {
  const content = Array.isArray(result.content) ? result.content : [];
  if (content.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent, null, 2);
  return content.map(renderContent).join('\n');
}

export function renderReadResult(result: JsonObject): string {
  const contents = Array.isArray(result.contents) ? result.contents.filter(isJsonObject) : [];
  return contents.map(renderResourceContents).join('\n');
}

/** A prompts/get result: each message as `role: content`. */
export function renderPromptResult(result: JsonObject): string {
  const messages = Array.isArray(result.messages) ? result.messages.filter(isJsonObject) : [];
  return messages.map((message) => `${String(message.role)}: ${renderContent(message.content)}`).join('\n\n');
}
