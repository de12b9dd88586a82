// A plugin's options: the schema pieces the built-in families share (a plugin's
// `optionsSchema` is built from them and `Type`), a check of options against a
// plugin's schema for its tests, and readers that apply defaults in create(), where
// options are valid.

import { Type, type TArray, type TInteger, type TProperties, type TRecord, type TString } from '@sinclair/typebox';
import type { ChainPlugin } from '../plugin/contract.js';
import { checkShape } from '../config/validate.js';

export type Problems = Array<[string, string]>;
type Options = Readonly<Record<string, unknown>>;

/** A namespace or path segment: a letter, then letters and digits (no `_`, which splits methods). */
const NAME = '^[A-Za-z][A-Za-z0-9]*$';
/** A method pattern: letters, digits, `_`, `.`, `/`, `-`, with `*` wildcards. */
const PATTERN = '^[A-Za-z0-9_./*-]{1,128}$';
/** A cost key: a name, or a prefix pattern ending in a single `*`. */
const COST_KEY = '^[^*]+\\*?$';

/** The options block: these settings, each optional, and no other. */
export function OptionsSchema<P extends TProperties>(props: P) {
  return Type.Partial(Type.Object(props, { additionalProperties: false }));
}

export function PositiveInt(): TInteger {
  return Type.Integer({ minimum: 1, errorMessage: 'must be a positive integer' });
}

/** A non-empty list of names like namespaces; `example` is shown in messages, like `[eth, evm]`. */
export function NameList(example: string): TArray<TString> {
  return Type.Array(Type.String({ pattern: NAME, errorMessage: `must be a name of letters and digits, like those of ${example}` }), {
    minItems: 1,
    errorMessage: `must be a non-empty list of names (letters and digits) like ${example}`,
  });
}

/** A list of method names or patterns with `*`, like `["admin_peers", "txpool_*"]`. */
export function PatternList(example: string): TArray<TString> {
  const message = `must be a list of method names or patterns with * like ${example}`;
  return Type.Array(Type.String({ pattern: PATTERN, errorMessage: message }), { errorMessage: message });
}

/** The `costs` option: names, or patterns ending in `*`, to positive integers. */
export function CostsSchema(example: string): TRecord<TString, TInteger> {
  return Type.Record(Type.String(), PositiveInt(), {
    errorMessage: `must map names or patterns ending in * to positive integers, e.g. ${example}`,
    propertyNames: { pattern: COST_KEY, errorMessage: 'a pattern may hold one *, at its end (e.g. "trace_*")' },
  });
}

/**
 * What check-config says of these options for a chain using `plugin`, as
 * `[pathBelowOptions, message]` pairs; [] when they are valid. For plugins' tests.
 */
export function checkOptions(plugin: ChainPlugin, options: Options): Problems {
  const copy: Record<string, unknown> = structuredClone({ ...options });
  const problems = plugin.optionsSchema === undefined ? [] : checkShape(plugin.optionsSchema, copy, '', 'option').pairs;
  return problems.length > 0 ? problems : (plugin.validateOptions?.(copy) ?? []);
}

/** A positive integer option, or its default. */
export function intOption(options: Options, name: string, fallback: number): number {
  const v = options[name];
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? v : fallback;
}

/** A list-of-names option, or its default. */
export function namesOption(options: Options, name: string, fallback: readonly string[]): readonly string[] {
  const v = options[name];
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string') ? v : fallback;
}

/** A list-of-patterns option, or an empty list. */
export function patternsOption(options: Options, name: string): readonly string[] {
  const v = options[name];
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : [];
}

/**
 * The methods an operator allowed on a chain though the plugin refuses them (node
 * administration, the node's keystore): `allowMethods`, with `openMethods`, its former
 * name, still read.
 */
export function allowMethodsOption(options: Options): readonly string[] {
  return [...patternsOption(options, 'allowMethods'), ...patternsOption(options, 'openMethods')];
}

/** The `costs` map, or an empty one. */
export function costsOption(options: Options): Readonly<Record<string, number>> {
  const v = options.costs;
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, number>) : {};
}
