// Reads response headers: one value of a header, the parsed media type, Retry-After.

import type { HttpExchange } from './send.js';

export function headerValue(headers: HttpExchange['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The parsed media type ("text/event-stream"), lower-case, without parameters; never sniffed. */
export function mediaTypeOf(headers: HttpExchange['headers']): string | undefined {
  const raw = headerValue(headers, 'content-type');
  if (raw === undefined) return undefined;
  // The two types every reply carries, as servers usually spell them: no split or copy per message.
  if (raw === 'application/json' || raw === 'text/event-stream') return raw;
  const type = raw.split(';', 1)[0]!.trim().toLowerCase();
  return type === '' ? undefined : type;
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date), undefined when absent or unreadable. */
export function retryAfterMs(headers: HttpExchange['headers'], now: number = Date.now()): number | undefined {
  const raw = headerValue(headers, 'retry-after')?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
