// Arguments checked against a tool's inputSchema before the call is sent.

import { describe, expect, it } from 'vitest';
import { acceptsValue, checkArguments, MAX_SCHEMA_DEPTH } from '../../../src/shell/schema-check.js';

describe('checkArguments', () => {
  const schema = {
    type: 'object',
    properties: {
      ref: { type: 'string' },
      count: { type: 'integer' },
      ratio: { type: 'number' },
      flag: { type: 'boolean' },
      nothing: { type: 'null' },
      status: { type: 'string', enum: ['open', 'done'] },
      kind: { const: 'task' },
      tags: { type: 'array', items: { type: 'string' } },
      owner: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
      free: {},
      odd: { type: 'uuid' },
    },
    required: ['ref'],
  };

  it('passes arguments that fit', () => {
    const args = {
      ref: 'T-1',
      count: 2,
      ratio: 0.5,
      flag: false,
      nothing: null,
      status: 'done',
      kind: 'task',
      tags: ['a'],
      owner: { name: 'ada' },
      free: [1],
      odd: 3,
    };
    expect(checkArguments(schema, args)).toEqual({ errors: [], warnings: [] });
  });

  it('names each missing required argument and each value of the wrong type', () => {
    const { errors } = checkArguments(schema, {
      count: 1.5,
      ratio: 'x',
      flag: 'yes',
      nothing: 0,
      status: 'later',
      kind: 'bug',
      tags: ['a', 2],
      owner: { nick: 'x' },
    });
    expect(errors).toEqual([
      'missing required argument "ref"',
      'argument "count" must be integer, got number 1.5',
      'argument "ratio" must be number, got string "x"',
      'argument "flag" must be boolean, got string "yes"',
      'argument "nothing" must be null, got integer 0',
      'argument "status" must be one of "open", "done", got string "later"',
      'argument "kind" must be "task", got string "bug"',
      'argument "tags[1]" must be string, got integer 2',
      'missing required argument "owner.name"',
      'unknown argument "owner.nick" (known: name)',
    ]);
  });

  it('describes objects, arrays and long strings briefly', () => {
    const { errors } = checkArguments(
      { properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'integer' } } },
      { a: { x: 1 }, b: [1], c: 'y'.repeat(60) },
    );
    expect(errors).toEqual([
      'argument "a" must be string, got object',
      'argument "b" must be string, got array',
      `argument "c" must be integer, got string "${'y'.repeat(36)}...`,
    ]);
  });

  it('warns about a name the schema does not list, unless additionalProperties is false', () => {
    expect(checkArguments(schema, { ref: 'T-1', reff: 1 }).warnings).toEqual([
      'unknown argument "reff" (known: ref, count, ratio, flag, nothing, status, kind, tags, owner, free, odd)',
    ]);
    expect(checkArguments({ type: 'object' }, { x: 1 }).warnings).toEqual(['unknown argument "x"']);
    expect(checkArguments({ type: 'object', additionalProperties: false }, { x: 1 }).errors).toEqual(['unknown argument "x"']);
  });

  it('checks nothing when there is no schema, and stops at MAX_SCHEMA_DEPTH', () => {
    expect(checkArguments(undefined, { a: 1 })).toEqual({ errors: [], warnings: [] });
    let deep: Record<string, unknown> = { type: 'string' };
    let value: unknown = 1;
    for (let level = 0; level <= MAX_SCHEMA_DEPTH; level++) {
      deep = { type: 'object', properties: { a: deep } };
      value = { a: value };
    }
    expect(checkArguments({ type: 'object', properties: { a: deep } }, { a: value }).errors).toEqual([]);
  });
});

describe('acceptsValue', () => {
  it('refuses numbers, strings and arrays outside their bounds before sending, and passes them at the bounds', () => {
    const bounded = {
      type: 'object',
      properties: {
        count: { type: 'integer', minimum: 1, maximum: 100 },
        ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
        legacy: { type: 'number', minimum: 0, exclusiveMinimum: true },
        code: { type: 'string', minLength: 2, maxLength: 3 },
        tags: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string', maxLength: 1 } },
        loose: { type: 'number', minimum: 'one' },
      },
    };
    expect(checkArguments(bounded, { count: 1, ratio: 0.5, legacy: 0.1, code: 'Zü', tags: ['a', 'b'], loose: -5 })).toEqual({ errors: [], warnings: [] });
    expect(checkArguments(bounded, { count: 100, code: 'abc', tags: ['a'] }).errors).toEqual([]);
    expect(checkArguments(bounded, { count: 0, ratio: 1, legacy: 0, code: 'a', tags: [] }).errors).toEqual([
      'argument "count" must be at least 1, got 0',
      'argument "ratio" must be less than 1, got 1',
      'argument "legacy" must be greater than 0, got 0',
      'argument "code" must be at least 2 characters long, got 1',
      'argument "tags" must hold at least 1 item, got 0',
    ]);
    expect(checkArguments(bounded, { count: 101, ratio: 0, code: 'abcd', tags: ['a', 'b', 'c'] }).errors).toEqual([
      'argument "count" must be at most 100, got 101',
      'argument "ratio" must be greater than 0, got 0',
      'argument "code" must be at most 3 characters long, got 4',
      'argument "tags" must hold at most 2 items, got 3',
    ]);
    expect(checkArguments(bounded, { tags: ['ab'] }).errors).toEqual(['argument "tags[0]" must be at most 1 character long, got 2']);
  });

  it('says whether a value fits a property schema', () => {
    expect(acceptsValue({ type: ['string', 'null'] }, null)).toBe(true);
    expect(acceptsValue({ type: 'integer' }, '1')).toBe(false);
    expect(acceptsValue('not a schema', 1)).toBe(true);
  });
});

describe('checkArguments with a schema nested 100,000 levels deep', () => {
  it('says what a deep const or enum must be, cut to a readable depth, without overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const report = checkArguments({ type: 'object', properties: { x: { const: deep }, y: { enum: [deep] } } }, { x: 1, y: 2 });
    expect(report.errors).toHaveLength(2);
    expect(report.errors[0]).toMatch(/^argument "x" must be \{"a":\{"a":.*"…"\}+, got integer 1$/);
    expect(report.errors[0]!.length).toBeLessThan(1000);
    expect(checkArguments({ type: 'object', properties: { x: { const: deep } } }, { x: deep }).errors).toEqual([]);
  });
});
