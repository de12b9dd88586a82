// Building blocks of the config's shape (shape.ts) and of plugins' option schemas:
// TypeBox types that emit plain JSON Schema (draft-07), which editors and ajv read.
//
// - A setting with a default may be left out of the file: the JSON Schema does not
//   require it, validation fills the default in, and its static type has it present.
// - `errorMessage` is the problem text after the path (check-config prints
//   "<path> <errorMessage>"); VS Code and the YAML language server show it as well.
// - `description` says what a setting does: editors show it on hover, and
//   docs/configuration.md's reference is generated from it (reference.ts).

import {
  Type,
  type SchemaOptions,
  type TObject,
  type TProperties,
  type TRecord,
  type TSchema,
  type TString,
  type TUnsafe,
} from '@sinclair/typebox';

/** An integer within [min, max] (max unset: any size). */
export function Int(min: number, max?: number, fallback?: number, options: SchemaOptions = {}) {
  return Type.Integer({
    minimum: min,
    ...(max === undefined ? {} : { maximum: max }),
    ...(fallback === undefined ? {} : { default: fallback }),
    ...options,
  });
}

/** A non-empty string. */
export function Str(fallback?: string, options: SchemaOptions = {}): TString {
  return Type.String({ minLength: 1, ...(fallback === undefined ? {} : { default: fallback }), ...options });
}

export function Bool(fallback: boolean, options: SchemaOptions = {}) {
  return Type.Boolean({ default: fallback, ...options });
}

/** One of a few words. */
export function Enum<const T extends readonly string[]>(values: T, fallback?: T[number], options: SchemaOptions = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({
    type: 'string',
    enum: [...values],
    ...(fallback === undefined ? {} : { default: fallback }),
    ...options,
  });
}

/** A mapping with only these keys; the ones without a default or Optional are required. */
export function Shape<P extends TProperties>(props: P, options: SchemaOptions = {}): TObject<P> {
  const o = Type.Object(props, { additionalProperties: false, ...options });
  const loose = o as { required?: string[] };
  const required = (loose.required ?? []).filter((k) => !('default' in (props[k] as TSchema)));
  if (required.length === 0) delete loose.required;
  else loose.required = required;
  return o;
}

/** A section that may be left out: it then holds its settings' defaults. */
export function Section<P extends TProperties>(props: P, options: SchemaOptions = {}): TObject<P> {
  return Shape(props, { default: {}, ...options });
}

/** A mapping of names the user chooses (chains, tiers, headers) to values. */
export function Named<V extends TSchema>(value: V, options: SchemaOptions = {}): TRecord<TString, V> {
  return Type.Record(Type.String(), value, options);
}

/** A positive number, or the word `unlimited`. */
export function Limit(fallback?: number | 'unlimited', options: SchemaOptions = {}): TUnsafe<number | 'unlimited'> {
  return Type.Unsafe<number | 'unlimited'>({
    anyOf: [{ type: 'number', minimum: 0 }, { const: 'unlimited' }],
    errorMessage: 'must be a number of 0 or more, or "unlimited"',
    ...(fallback === undefined ? {} : { default: fallback }),
    ...options,
  });
}
