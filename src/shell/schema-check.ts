// Checks arguments against a tool's inputSchema (required, type, enum, bounds, nested properties and items) before anything is sent.

import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { jsonText, shownWithin } from './json-text.js';

/** Nesting followed into `properties` and `items`; deeper values are left to the server. */
export const MAX_SCHEMA_DEPTH = 16;

/** What the check found: `errors` refuse the call; `warnings` (a name the schema does not list) only say so. */
export interface SchemaReport {
  errors: string[];
  warnings: string[];
}

/** Checks `args` against `schema`, an object schema; anything it does not understand passes. */
export function checkArguments(schema: unknown, args: JsonObject): SchemaReport {
  const report: SchemaReport = { errors: [], warnings: [] };
  if (isJsonObject(schema)) checkObject(schema, args, '', report, 0);
  return report;
}

/** True when `value` has one of the types `schema` allows (and is in its enum, if any). */
export function acceptsValue(schema: unknown, value: unknown): boolean {
  return problemOf(schema, value) === undefined;
}

function checkObject(schema: JsonObject, value: JsonObject, path: string, report: SchemaReport, depth: number): void {
  const properties = isJsonObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
  for (const name of required) {
    if (value[name] === undefined) report.errors.push(`missing required argument "${path}${name}"`);
  }
  for (const [name, item] of Object.entries(value)) {
    const property = properties[name];
    if (property === undefined) {
      const known = Object.keys(properties);
      const line = `unknown argument "${path}${name}"${known.length === 0 ? '' : ` (known: ${known.join(', ')})`}`;
      if (schema.additionalProperties === false) report.errors.push(line);
      else if (path === '') report.warnings.push(line);
      continue;
    }
    checkValue(property, item, `${path}${name}`, report, depth + 1);
  }
}

function checkValue(schema: unknown, value: unknown, path: string, report: SchemaReport, depth: number): void {
  if (!isJsonObject(schema) || depth > MAX_SCHEMA_DEPTH) return;
  const problem = problemOf(schema, value) ?? boundsProblem(schema, value);
  if (problem !== undefined) {
    report.errors.push(`argument "${path}" ${problem}`);
    return;
  }
  if (isJsonObject(value) && (isJsonObject(schema.properties) || Array.isArray(schema.required) || schema.additionalProperties === false)) {
    checkObject(schema, value, `${path}.`, report, depth);
  } else if (Array.isArray(value) && isJsonObject(schema.items)) {
    value.forEach((item, index) => checkValue(schema.items, item, `${path}[${index}]`, report, depth + 1));
  }
}

/** Why `value` does not fit `schema`'s `type`, `enum` or `const`; undefined when it does. */
function problemOf(schema: unknown, value: unknown): string | undefined {
  if (!isJsonObject(schema)) return undefined;
  const types =
    typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? schema.type.filter((type): type is string => typeof type === 'string') : [];
  if (types.length > 0 && !types.some((type) => hasType(value, type))) return `must be ${types.join(' or ')}, got ${describe(value)}`;
  if (Array.isArray(schema.enum) && !schema.enum.some((allowed) => sameJson(allowed, value))) {
    return `must be one of ${schema.enum.map((allowed) => JSON.stringify(shownWithin(allowed, MAX_SCHEMA_DEPTH).shown)).join(', ')}, got ${describe(value)}`;
  }
  if ('const' in schema && !sameJson(schema.const, value))
    return `must be ${JSON.stringify(shownWithin(schema.const, MAX_SCHEMA_DEPTH).shown)}, got ${describe(value)}`;
  return undefined;
}

/**
 * Why `value` is outside `schema`'s bounds: minimum, maximum and their exclusive forms for numbers
 * (draft 2020-12 validation §6.2.2–6.2.5; draft-04's boolean exclusiveMinimum/Maximum too), minLength
 * and maxLength for strings counted in characters (§6.3.1–6.3.2), minItems and maxItems for arrays
 * (§6.4.1–6.4.2). A bound that is not a number is ignored, as one the check does not understand.
 */
function boundsProblem(schema: JsonObject, value: unknown): string | undefined {
  const bound = (name: string) => (typeof schema[name] === 'number' && Number.isFinite(schema[name]) ? schema[name] : undefined);
  if (typeof value === 'number') {
    const minimum = bound('minimum');
    const maximum = bound('maximum');
    // Draft-04: exclusiveMinimum/exclusiveMaximum true makes minimum/maximum exclusive.
    const exclusiveMinimum = bound('exclusiveMinimum') ?? (schema.exclusiveMinimum === true ? minimum : undefined);
    const exclusiveMaximum = bound('exclusiveMaximum') ?? (schema.exclusiveMaximum === true ? maximum : undefined);
    if (exclusiveMinimum !== undefined && value <= exclusiveMinimum) return `must be greater than ${exclusiveMinimum}, got ${value}`;
    if (minimum !== undefined && value < minimum) return `must be at least ${minimum}, got ${value}`;
    if (exclusiveMaximum !== undefined && value >= exclusiveMaximum) return `must be less than ${exclusiveMaximum}, got ${value}`;
    if (maximum !== undefined && value > maximum) return `must be at most ${maximum}, got ${value}`;
  } else if (typeof value === 'string') {
    const length = [...value].length;
    const minLength = bound('minLength');
    const maxLength = bound('maxLength');
    if (minLength !== undefined && length < minLength) return `must be at least ${minLength} character${minLength === 1 ? '' : 's'} long, got ${length}`;
    if (maxLength !== undefined && length > maxLength) return `must be at most ${maxLength} character${maxLength === 1 ? '' : 's'} long, got ${length}`;
  } else if (Array.isArray(value)) {
    const minItems = bound('minItems');
    const maxItems = bound('maxItems');
    if (minItems !== undefined && value.length < minItems) return `must hold at least ${minItems} item${minItems === 1 ? '' : 's'}, got ${value.length}`;
    if (maxItems !== undefined && value.length > maxItems) return `must hold at most ${maxItems} item${maxItems === 1 ? '' : 's'}, got ${value.length}`;
  }
  return undefined;
}

/** JSON Schema's type names (draft 2020-12 validation §6.1.1); an unknown name accepts anything. */
function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isJsonObject(value);
    default:
      return true;
  }
}

function describe(value: unknown): string {
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' && Number.isInteger(value) ? 'integer' : typeof value;
  const shown = jsonText(shownWithin(value, MAX_SCHEMA_DEPTH).shown);
  return kind === 'object' || kind === 'array' || kind === 'null' ? kind : `${kind} ${shown.length > 40 ? `${shown.slice(0, 37)}...` : shown}`;
}

function sameJson(a: unknown, b: unknown): boolean {
  return jsonText(a) === jsonText(b);
}
