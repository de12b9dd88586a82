// Agreement rules plugins build from (AgreementRule in the contract): JSON answers in a
// canonical text (members sorted, fields that rightly differ between honest nodes left
// out at any depth), and numeric answers where the highest wins. Parsing happens only
// for calls a chain checks by agreement, never on the ordinary path.

import type { AgreementRule } from '../plugin/contract.js';

/** A JSON value as text with object members sorted and the named members left out at any depth. */
export function canonicalJson(value: unknown, ignore: ReadonlySet<string>): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, ignore)).join(',')}]`;
  const keys = Object.keys(value)
    .filter((k) => !ignore.has(k))
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k], ignore)}`).join(',')}}`;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * JSON-RPC answers agree when their `result` (or `error`) is the same once `ignore`d
 * members are left out; the envelope (`id`, `jsonrpc`) is never compared.
 */
export function jsonRpcSame(ignore: readonly string[] = []): AgreementRule {
  const skip = new Set(ignore);
  return {
    kind: 'same',
    canonical(text) {
      const v = parsed(text);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
      const o = v as Record<string, unknown>;
      if ('error' in o) return `error:${canonicalJson(o.error, skip)}`;
      return 'result' in o ? canonicalJson(o.result, skip) : undefined;
    },
  };
}

/** JSON-RPC answers whose `result` is a number (hex quantity, decimal string or number): the highest wins. */
export const jsonRpcHighest: AgreementRule = {
  kind: 'highest',
  canonical(text) {
    const v = parsed(text);
    if (v === null || typeof v !== 'object') return undefined;
    const r = (v as Record<string, unknown>).result;
    try {
      if (typeof r === 'string' && /^(0x[0-9a-fA-F]+|\d+)$/.test(r)) return BigInt(r).toString();
      if (typeof r === 'number' && Number.isSafeInteger(r) && r >= 0) return String(r);
    } catch {
      return undefined;
    }
    return undefined;
  },
};

/** A JSON body (REST) compared whole once `ignore`d members are left out; a body that is not JSON is compared as text. */
export function jsonSame(ignore: readonly string[] = []): AgreementRule {
  const skip = new Set(ignore);
  return {
    kind: 'same',
    canonical(text) {
      const v = parsed(text);
      return v === undefined ? text : canonicalJson(v, skip);
    },
  };
}
