// The pure conversions between 2025-era messages and their 2026-07-28 form.

import { describe, expect, it } from 'vitest';
import {
  inputRequiredOf,
  isInitializeRefusal,
  listenFilterFor,
  speaksOnlyModern,
  toClientProfile,
  toInitializeResult,
  toModernParams,
  toRetryParams,
  whyClientCannotAnswer,
} from '../../../src/eras/translate-messages.js';

const profile = toClientProfile({ protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 'c', version: '1' } });

describe('isInitializeRefusal', () => {
  it.each([
    [{ error: { code: -32022, message: 'x' } }, true],
    [{ error: { code: -32601, message: 'x' } }, true],
    [{ error: { code: -32020, message: 'x' } }, true],
    [{ error: { code: -31001, message: 'x', data: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 404 } } }, true],
    [{ error: { code: -31001, message: 'x', data: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 400 } } }, true],
    [{ error: { code: -31001, message: 'x', data: { bridgeCode: 'REMOTE_HTTP_STATUS', status: 500 } } }, false],
    [{ error: { code: -31002, message: 'x', data: { bridgeCode: 'REMOTE_AUTH', status: 401 } } }, false],
    [{ result: {} }, false],
  ])('says %j is a refusal: %s', (reply, expected) => {
    expect(isInitializeRefusal({ jsonrpc: '2.0', id: 1, ...reply })).toBe(expected);
  });
});

describe('speaksOnlyModern', () => {
  it('needs 2026-07-28 and no 2025 revision', () => {
    expect(speaksOnlyModern({ supportedVersions: ['2026-07-28'] })).toBe(true);
    expect(speaksOnlyModern({ supportedVersions: ['2025-06-18', '2026-07-28'] })).toBe(false);
    expect(speaksOnlyModern({ supportedVersions: ['2027-01-01'] })).toBe(false);
    expect(speaksOnlyModern({})).toBe(false);
  });
});

describe('toInitializeResult', () => {
  it('drops resources.subscribe, which has no 2026-07-28 counterpart the bridge maps', () => {
    const result = toInitializeResult(
      { capabilities: { resources: { subscribe: true, listChanged: true } }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 's', version: '2' } } },
      profile,
    );
    expect(result).toEqual({ protocolVersion: '2025-11-25', capabilities: { resources: { listChanged: true } }, serverInfo: { name: 's', version: '2' } });
  });

  it('falls back to defaults for a client that sent no profile', () => {
    expect(toClientProfile(undefined)).toEqual({ protocolVersion: '2026-07-28', capabilities: {}, clientInfo: undefined });
    expect(toInitializeResult({}, toClientProfile(undefined)).capabilities).toEqual({});
  });
});

describe('listenFilterFor', () => {
  it('asks for the list changes the server declared, and none when it declared none', () => {
    expect(listenFilterFor({ tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } })).toEqual({
      toolsListChanged: true,
      promptsListChanged: true,
      resourcesListChanged: true,
    });
    expect(listenFilterFor({ tools: {} })).toBeUndefined();
    expect(listenFilterFor(undefined)).toBeUndefined();
  });
});

describe('toModernParams and toRetryParams', () => {
  it('keeps the client meta, sets the envelope and log level, and adds the answers to one retry only', () => {
    const params = toModernParams({ name: 't', _meta: { progressToken: 5 } }, profile, 'error');
    expect(params).toEqual({
      name: 't',
      _meta: {
        progressToken: 5,
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
        'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
        'io.modelcontextprotocol/logLevel': 'error',
      },
    });
    expect(toRetryParams(params, { a: {} }, undefined)).toEqual({ ...params, inputResponses: { a: {} } });
    expect(toRetryParams(params, {}, 's')).toEqual({ ...params, inputResponses: {}, requestState: 's' });
    expect(toModernParams(undefined, toClientProfile({}), undefined)._meta).not.toHaveProperty('io.modelcontextprotocol/clientInfo');
  });
});

describe('inputRequiredOf', () => {
  it('reads an input_required result and nothing else', () => {
    expect(inputRequiredOf({ result: { resultType: 'input_required', requestState: 's' } })).toEqual({ inputRequests: {}, requestState: 's' });
    expect(inputRequiredOf({ result: { resultType: 'complete' } })).toBeUndefined();
    expect(inputRequiredOf({ error: {} })).toBeUndefined();
  });
});

describe('whyClientCannotAnswer', () => {
  it.each([
    [{ method: 'elicitation/create', params: {} }, {}, /elicitation capability/],
    [{ method: 'elicitation/create', params: { mode: 'url' } }, { elicitation: {} }, /mode "url"/],
    [{ method: 'sampling/createMessage', params: {} }, {}, /sampling capability/],
    [{ method: 'sampling/createMessage', params: { tools: [] } }, { sampling: {} }, /sampling with tools/],
    [{ method: 'roots/list' }, {}, /roots capability/],
    [{ method: 'tasks/get' }, {}, /no 2025-era server-to-client request/],
    ['not a request', {}, /not a request object/],
  ])('refuses %j for capabilities %j', (request, capabilities, reason) => {
    expect(whyClientCannotAnswer(request, capabilities)).toMatch(reason);
  });

  it.each([
    [{ method: 'elicitation/create', params: { mode: 'form' } }, { elicitation: {} }],
    [{ method: 'sampling/createMessage', params: { tools: [] } }, { sampling: { tools: {} } }],
    [{ method: 'roots/list' }, { roots: {} }],
  ])('accepts %j for capabilities %j', (request, capabilities) => {
    expect(whyClientCannotAnswer(request, capabilities)).toBeUndefined();
  });
});
