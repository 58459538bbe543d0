// BridgeError and the one table that says how each failure becomes a JSON-RPC error.

/**
 * Every failure the bridge itself reports has a stable code from this table.
 *
 * JSON-RPC codes are chosen outside -32768…-32000: the spec reserves -32020…-32099 and asks
 * that locally generated errors "cannot be mistaken for errors received from the peer"
 * (2026-07-28 basic §Error Codes). Only the two line checks use the standard -32700 / -32600,
 * because they are exactly JSON-RPC's "Parse error" and "Invalid Request", and METHOD_NOT_FOUND uses
 * -32601 because a client probing with server/discover must read it as "Method not found" to fall
 * back to initialize at once, and TOOL_FILTERED uses -32602 because that is what a server answers
 * for a tool it does not have (2025-06-18 server/tools §Error Handling).
 */
export const BRIDGE_ERRORS = {
  PARSE_ERROR: { rpcCode: -32700, summary: 'the line is not valid JSON' },
  INVALID_REQUEST: { rpcCode: -32600, summary: 'the line is not a single JSON-RPC 2.0 message' },
  LINE_TOO_LONG: { rpcCode: -32600, summary: 'the line is longer than the configured limit' },
  METHOD_NOT_FOUND: { rpcCode: -32601, summary: 'the server does not offer this method (server/discover on a 2025-era server)' },
  TOOL_FILTERED: { rpcCode: -32602, summary: 'the tool is hidden by --allow-tools / --deny-tools; the call was not sent' },
  REMOTE_HTTP_STATUS: { rpcCode: -31001, summary: 'the server answered with an HTTP error status' },
  REMOTE_AUTH: { rpcCode: -31002, summary: 'the server rejected the credentials' },
  REMOTE_UNREACHABLE: { rpcCode: -31003, summary: 'the server could not be reached' },
  REMOTE_TLS: { rpcCode: -31004, summary: 'the TLS connection to the server failed' },
  REMOTE_CONNECTION_LOST: { rpcCode: -31005, summary: 'the connection to the server broke' },
  REMOTE_BAD_REPLY: { rpcCode: -31006, summary: 'the server sent a reply that is not a usable JSON-RPC answer' },
  REMOTE_STREAM_ENDED: { rpcCode: -31007, summary: "the server's event stream ended without the response" },
  REQUEST_TIMEOUT: { rpcCode: -31008, summary: 'the request deadline passed' },
  STREAM_IDLE_TIMEOUT: { rpcCode: -31009, summary: "the server's stream stayed silent longer than allowed" },
  REPLY_TOO_LARGE: { rpcCode: -31010, summary: 'the reply is larger than the configured limit' },
  REDIRECT_REFUSED: { rpcCode: -31011, summary: 'the server redirected the request other than by a 307/308 to the same origin, or in a loop' },
  SESSION_LOST: { rpcCode: -31012, summary: 'the session expired and could not be re-established' },
  PROXY_FAILED: { rpcCode: -31013, summary: 'the HTTP proxy refused or failed the connection' },
  SHUTTING_DOWN: { rpcCode: -31014, summary: 'the bridge is shutting down' },
  AUTH_REQUIRED: { rpcCode: -31015, summary: 'the server needs a sign-in that did not complete' },
  TOKEN_COMMAND_FAILED: { rpcCode: -31020, summary: 'the --token-command failed, printed nothing, or took too long' },
  INPUT_UNAVAILABLE: { rpcCode: -31021, summary: 'the server asked for input the 2025-era client cannot give' },
  INPUT_ROUNDS_EXCEEDED: { rpcCode: -31022, summary: 'the server kept asking for input past the round limit' },
  INPUT_REQUESTS_EXCEEDED: { rpcCode: -31023, summary: 'the server asked for more inputs at once than the bridge asks a client for' },
  INTERNAL: { rpcCode: -31099, summary: 'the bridge failed unexpectedly' },
} as const;

export type BridgeErrorCode = keyof typeof BRIDGE_ERRORS;

/** What a BridgeError carries besides its message; ends up in the JSON-RPC error's `data`. */
export interface BridgeErrorContext {
  status?: number | undefined;
  bodyExcerpt?: string | undefined;
  hint?: string | undefined;
  method?: string | undefined;
  location?: string | undefined;
  wwwAuthenticate?: string | undefined;
  cause?: string | undefined;
  [key: string]: unknown;
}

export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  readonly code: BridgeErrorCode;
  readonly context: BridgeErrorContext;

  constructor(code: BridgeErrorCode, message: string, context: BridgeErrorContext = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.context = context;
  }

  get rpcCode(): number {
    return BRIDGE_ERRORS[this.code].rpcCode;
  }
}

export function isBridgeError(value: unknown): value is BridgeError {
  return value instanceof BridgeError;
}

/** The `data` object of the JSON-RPC error a BridgeError becomes: stable code first, no undefined keys. */
export function toErrorData(error: BridgeError): Record<string, unknown> {
  const data: Record<string, unknown> = { bridgeCode: error.code };
  for (const [key, value] of Object.entries(error.context)) {
    if (value !== undefined) data[key] = value;
  }
  return data;
}

/** A mistake in how the bridge was started: one message on stderr and exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** The one line to run instead, when there is one. */
  readonly fix: string | undefined;
  constructor(message: string, fix?: string) {
    super(message);
    this.fix = fix;
  }
}
