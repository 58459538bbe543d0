import { describe, expect, it } from 'vitest';
import { BRIDGE_ERRORS, BridgeError, toErrorData } from '../../../src/core/errors.js';

describe('the bridge error table', () => {
  const entries = Object.entries(BRIDGE_ERRORS);

  it.each(entries)('%s uses a code the spec does not reserve', (_name, { rpcCode }) => {
    // -32020…-32099 are reserved for the spec (2026-07-28 basic §Error Codes).
    expect(rpcCode >= -32099 && rpcCode <= -32020).toBe(false);
  });

  it('keeps bridge-made failures outside the JSON-RPC server range, so they cannot pass for server errors', () => {
    for (const [name, { rpcCode }] of entries) {
      // JSON-RPC's own meanings, chosen on purpose: a client must read them as such.
      if (['PARSE_ERROR', 'INVALID_REQUEST', 'LINE_TOO_LONG', 'METHOD_NOT_FOUND', 'TOOL_FILTERED'].includes(name)) continue;
      expect(rpcCode < -32768 || rpcCode > -32000).toBe(true);
    }
  });

  it('gives each failure of the remote side its own code', () => {
    const codes = entries
      .filter(([name]) => !['PARSE_ERROR', 'INVALID_REQUEST', 'LINE_TOO_LONG', 'METHOD_NOT_FOUND', 'TOOL_FILTERED'].includes(name))
      .map(([, e]) => e.rpcCode);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('turns context into data with the stable code first and no undefined keys', () => {
    const error = new BridgeError('REMOTE_HTTP_STATUS', 'x', { status: 502, hint: 'h', bodyExcerpt: undefined });
    expect(toErrorData(error)).toEqual({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 502, hint: 'h' });
    expect(Object.keys(toErrorData(error))[0]).toBe('bridgeCode');
    expect(error.rpcCode).toBe(-31001);
  });
});
