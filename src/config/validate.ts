// Checking a tree against a JSON Schema (the config's shape, a plugin's options) with
// ajv, and turning ajv's errors into check-config's problems: "<path> <what is wrong
// and what is accepted>", the path written as in the file (chains.l1.nodes[0].url).
//
// ajv rather than TypeBox's own Value checker: the JSON Schema editors read is then
// exactly what check-config enforces, allErrors reports every mistake of a file in one
// run, its errors carry the parameters messages need (the unknown key, the allowed
// words, the bounds), and it reads ${ENV} strings as the numbers and booleans the
// schema asks for (coerceTypes) and fills in defaults (useDefaults) in one pass.

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { TSchema } from '@sinclair/typebox';

// Compiled once per schema at startup; unoptimised code compiles in half the time and checks a file as fast.
const ajv = new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true, strictTypes: false, code: { optimize: false } });
ajv.addKeyword({ keyword: 'errorMessage', schemaType: 'string' });

const compiled = new WeakMap<object, ValidateFunction>();

function validator(schema: TSchema): ValidateFunction {
  let v = compiled.get(schema);
  if (v === undefined) {
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

export interface ShapeResult {
  /** "<path> <message>" lines, one per faulty setting. */
  readonly problems: string[];
  /** The same as [path, message] pairs. */
  readonly pairs: Array<[string, string]>;
  /** No problem at this JSON pointer (below `at`), so its value has the type the schema says. */
  ok(pointer: string): boolean;
  /** No problem at this JSON pointer or anywhere below it. */
  clean(pointer: string): boolean;
}

type Json = Record<string, unknown>;

function isTree(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A YAML key left empty (`key:`) means the key is not there. */
export function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (!isTree(v)) return v;
  const out: Json = {};
  for (const [k, child] of Object.entries(v)) if (child !== null) out[k] = withoutNulls(child);
  return out;
}

/**
 * Validate `tree` in place (defaults filled, strings coerced). `at` is the printed path
 * of the tree ('' for a whole file, `chains.l1.options` for a plugin's options); `noun`
 * names what an unknown key is not ("setting", "option").
 */
export function checkShape(schema: TSchema, tree: unknown, at: string, noun: string): ShapeResult {
  const validate = validator(schema);
  const root = schema as Json;
  validate(tree);
  const errors = validate.errors ?? [];
  const pairs: Array<[string, string]> = [];
  const printed = new Set<string>();
  const exact = new Set<string>();
  const below: string[] = [];
  const add = (pointer: string, message: string): void => {
    exact.add(pointer);
    below.push(pointer);
    const path = printPath(tree, pointer, at);
    if (printed.has(path)) return;
    printed.add(path);
    pairs.push([path, message]);
  };
  // Branch errors of a failed anyOf say less than the anyOf's own message.
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.schemaPath);
  for (const e of errors) {
    if (e.keyword === 'if' || e.keyword === 'propertyNames') continue;
    if (unions.some((u) => e.schemaPath.startsWith(`${u}/`))) continue;
    const schema = parentSchema(root, e.schemaPath);
    const params = e.params as Json;
    if (e.keyword === 'required') {
      const key = String(params.missingProperty);
      const properties = (schema.properties ?? {}) as Record<string, Json>;
      add(`${e.instancePath}/${escape(key)}`, `is required${requiredHint(properties[key] ?? {})}`);
    } else if (e.keyword === 'additionalProperties') {
      const known = Object.keys(schema.properties ?? {});
      add(`${e.instancePath}/${escape(String(params.additionalProperty))}`, `is not a known ${noun} (known: ${known.join(', ')})`);
    } else if (e.propertyName !== undefined) {
      add(`${e.instancePath}/${escape(e.propertyName)}`, message(e, schema));
    } else {
      add(e.instancePath, message(e, schema));
    }
  }
  return {
    problems: pairs.map(([path, message]) => `${path === '' ? 'the file' : path} ${message}`),
    pairs,
    ok: (pointer) => !exact.has(pointer),
    clean: (pointer) => !below.some((p) => p === pointer || p.startsWith(`${pointer}/`)),
  };
}

/** The schema holding the keyword an error names: `#/properties/port/minimum` → the port's schema. */
function parentSchema(root: Json, schemaPath: string): Json {
  let node: unknown = root;
  for (const raw of schemaPath.split('/').slice(1, -1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = isTree(node) || Array.isArray(node) ? (node as Json)[key] : undefined;
  }
  return isTree(node) ? node : {};
}

function escape(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function requiredHint(schema: Json): string {
  if (schema.type === 'array') return ' (a list)';
  if (schema.type === 'string') return ' (a string)';
  if (schema.type === 'integer') return ` (an integer from ${String(schema.minimum ?? 0)})`;
  return '';
}

function message(e: ErrorObject, schema: Json): string {
  if (typeof schema.errorMessage === 'string') return schema.errorMessage;
  const params = e.params as Json;
  switch (e.keyword) {
    case 'type':
    case 'minimum':
    case 'maximum':
    case 'multipleOf':
      return typeMessage(schema);
    case 'minLength':
      return 'must be a non-empty string';
    case 'enum': {
      const quoted = (params.allowedValues as unknown[]).map((c) => JSON.stringify(c));
      if (quoted.length === 1) return `must be ${quoted[0]}`;
      return `must be ${quoted.length === 2 ? `${quoted[0]} or ${quoted[1]}` : `one of ${quoted.join(', ')}`}`;
    }
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'minItems':
      return `must list at least ${String(params.limit)}`;
    case 'minProperties':
      return `must have at least ${String(params.limit)} ${Number(params.limit) === 1 ? 'entry' : 'entries'}`;
    default:
      return e.message ?? 'is not valid';
  }
}

function typeMessage(schema: Json): string {
  const min = typeof schema.minimum === 'number' ? schema.minimum : Number.MIN_SAFE_INTEGER;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Number.MAX_SAFE_INTEGER;
  switch (schema.type) {
    case 'integer':
      return `must be an integer from ${min} to ${max}`;
    case 'number':
      return `must be a number from ${min} to ${max}`;
    case 'boolean':
      return 'must be true or false';
    case 'string':
      return schema.minLength === 1 ? 'must be a non-empty string' : 'must be a string';
    case 'array':
      return 'must be a list';
    case 'object':
      return schema.properties === undefined ? 'must be a mapping of names to settings' : 'must be a mapping (key: value lines)';
    default:
      return 'is not valid';
  }
}

/** `/chains/l1/nodes/0/url` → `chains.l1.nodes[0].url`, array indexes read from the tree itself. */
export function printPath(tree: unknown, pointer: string, at: string): string {
  let path = at;
  let node = tree;
  for (const raw of pointer === '' ? [] : pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      path = `${path}[${key}]`;
      node = node[Number(key)];
    } else {
      path = path === '' ? key : `${path}.${key}`;
      node = isTree(node) ? node[key] : undefined;
    }
  }
  return path;
}
