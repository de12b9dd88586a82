// The property behind issue 18's first point: for any JSON-RPC body (members in any
// order, given twice, in any case, escaped), each item is either refused or the
// method, params and id the gateway took are exactly what a Go node would run. The
// reference decoder here reads JSON as Go's encoding/json does: the last of duplicate
// members wins and struct fields match their names in any case (ToUpper(ToLower(r))).

import { expect } from 'chai';
import fc from 'fast-check';
import { parseJsonRpcBody } from '../../../src/jsonrpc/envelope.js';
import { exactNames } from '../../../src/jsonrpc/member-names.js';
import type { JsonRpcCall as Call, RpcItem } from '../../../src/plugin/contract.js';

const isInvalid = (item: RpcItem | undefined): item is Extract<RpcItem, { kind: 'invalid' }> => item?.kind === 'invalid';

/** Names the EVM plugin reads inside params (plugins/evm): geth decodes them into structs. */
const STRUCT_FIELDS = ['fromBlock', 'toBlock', 'blockHash', 'blockNumber'];
const NAMES = exactNames(STRUCT_FIELDS);

// --- a reference decoder that keeps every member, in order -------------------------

interface GoObject {
  readonly pairs: readonly (readonly [string, GoValue])[];
}
type GoValue = null | boolean | number | string | readonly GoValue[] | GoObject;

const isGoObject = (v: GoValue): v is GoObject => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Go decodes a lone surrogate escape as U+FFFD. */
const wellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed();

function decode(text: string): GoValue {
  let i = 0;
  const ws = (): void => {
    while (/\s/.test(text[i] ?? '')) i++;
  };
  const str = (): string => {
    const m = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(i)) as RegExpExecArray;
    i += m[0].length;
    return JSON.parse(m[0]) as string;
  };
  const value = (): GoValue => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const pairs: [string, GoValue][] = [];
      ws();
      if (text[i] === '}') return (i++, { pairs });
      for (;;) {
        ws();
        const name = str();
        ws();
        i++; // :
        pairs.push([name, value()]);
        ws();
        if (text[i++] === '}') return { pairs };
      }
    }
    if (c === '[') {
      i++;
      const out: GoValue[] = [];
      ws();
      if (text[i] === ']') return (i++, out);
      for (;;) {
        out.push(value());
        ws();
        if (text[i++] === ']') return out;
      }
    }
    if (c === '"') return str();
    const m = /^(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i)) as RegExpExecArray;
    i += m[0].length;
    return JSON.parse(m[0]) as GoValue;
  };
  return value();
}

/** Go's fold of a name for matching struct fields: each rune to ToUpper(ToLower(r)), simple mappings. */
function goFold(name: string): string {
  let out = '';
  for (const ch of wellFormed(name)) {
    const lowered = ch === '\u0130' ? 'i' : ch.toLowerCase();
    const lower = [...lowered].length === 1 ? lowered : ch;
    const upper = lower.toUpperCase();
    out += [...upper].length === 1 ? upper : lower;
  }
  return out;
}

/** A struct field as Go fills it: the last member whose name folds to the field's. */
function field(obj: GoObject, name: string): GoValue | undefined {
  let found: GoValue | undefined;
  for (const [k, v] of obj.pairs) if (goFold(k) === goFold(name)) found = v;
  return found;
}

/** A value as Go decodes it into interface{}: maps keep exact names, the last one wins. */
function plain(v: GoValue | undefined): unknown {
  if (v === undefined || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(plain);
  const out: Record<string, unknown> = {};
  for (const [k, x] of (v as GoObject).pairs) out[wellFormed(k)] = plain(x);
  return out;
}

/** Would the gateway's rule let this item through: no object with two names folding alike, no variant of a name it reads? */
function clean(v: GoValue, depth: number): boolean {
  if (Array.isArray(v)) return v.every((x) => clean(x as GoValue, depth + 1));
  if (!isGoObject(v)) return true;
  const folded = v.pairs.map(([k]) => goFold(k));
  if (new Set(folded).size !== folded.length) return false;
  const exact = depth === 0 ? ['jsonrpc', 'id', 'method', 'params'] : STRUCT_FIELDS;
  for (const [k] of v.pairs) if (exact.some((n) => goFold(n) === goFold(k) && n !== wellFormed(k))) return false;
  return v.pairs.every(([, x]) => clean(x, depth + 1));
}

/** Every struct field the plugin reads, in every object of params, reads the same both ways. */
function sameFields(gateway: unknown, go: GoValue): void {
  if (Array.isArray(go)) {
    go.forEach((x, n) => sameFields((gateway as unknown[])[n], x as GoValue));
  } else if (isGoObject(go)) {
    const obj = gateway as Record<string, unknown>;
    for (const n of STRUCT_FIELDS) expect(obj[n], n).to.deep.equal(plain(field(go, n)));
    for (const [k, x] of go.pairs) sameFields(obj[wellFormed(k)], x);
  }
}

// --- generated bodies --------------------------------------------------------------

/** A spelling of `name`: as is, in another case, with Go's non-ASCII folds, or escaped. */
function spelling(name: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 20, arbitrary: fc.constant(name) },
    fc
      .array(fc.boolean(), { minLength: name.length, maxLength: name.length })
      .map((flips) => [...name].map((ch, n) => (flips[n] ? ch.toUpperCase() : ch)).join('')),
    fc.constant(name.replace('s', '\u017f').replace('k', '\u212a').replace('i', '\u0131').replace('I', '\u0130')),
    fc.nat(name.length - 1).map((n) => `${name.slice(0, n)}\\u${name.charCodeAt(n).toString(16).padStart(4, '0')}${name.slice(n + 1)}`),
  );
}

const block = fc.constantFrom('"latest"', '"0x0"', '"0x10"', '"earliest"', `"0x${'ab'.repeat(32)}"`);

/** A params object: block fields and others, some given twice or in another case. */
const paramObject = fc
  .array(
    fc
      .tuple(fc.constantFrom(...STRUCT_FIELDS, 'address', 'to', 'data', 'extra'), block)
      .chain(([n, v]) => spelling(n).map((s) => `"${s}":${v}`)),
    { maxLength: 5 },
  )
  .map((members) => `{${members.join(',')}}`);

const params = fc.oneof(
  fc.array(fc.oneof(block, paramObject, fc.constant('"0xab"')), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`),
  paramObject,
);

const envelopeValue: Record<string, fc.Arbitrary<string>> = {
  jsonrpc: fc.constantFrom('"2.0"', '"2.0"', '"1.0"'),
  id: fc.oneof(fc.nat(1000).map(String), fc.constantFrom('"a"', '"b"', 'null')),
  method: fc.constantFrom('"eth_getLogs"', '"eth_getBalance"', '"eth_call"', '"debug_setHead"'),
  params,
};

const member = (name: string): fc.Arbitrary<string> =>
  fc.tuple(spelling(name), envelopeValue[name] as fc.Arbitrary<string>).map(([n, v]) => `"${n}":${v}`);

/** An item: the four envelope members, then up to two more (duplicates or variants), shuffled. */
const item = fc
  .tuple(
    fc.tuple(member('jsonrpc'), member('id'), member('method'), member('params')),
    fc.array(fc.constantFrom('jsonrpc', 'id', 'method', 'params').chain(member), { maxLength: 1 }),
    fc.constantFrom('', ' ', '\n'),
  )
  .chain(([base, extra, ws]) =>
    fc.shuffledSubarray([...base, ...extra], { minLength: base.length + extra.length }).map((ms) => `{${ws}${ms.join(`,${ws}`)}}`),
  );

describe('what the gateway reads is what a Go node runs', () => {
  it('for any body, an item is refused or its method, params and id are the ones Go decodes', () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 4 }), fc.boolean(), (texts, asBatch) => {
        const batch = asBatch || texts.length > 1;
        const { items } = parseJsonRpcBody(batch ? `[${texts.join(',')}]` : (texts[0] as string), undefined, { names: NAMES });
        expect(items).to.have.length(batch ? texts.length : 1);
        items.forEach((got, n) => {
          const go = decode(texts[n] as string) as GoObject;
          if (!clean(go, 0)) {
            expect(isInvalid(got), texts[n]).to.equal(true);
            refused++;
            return;
          }
          if (isInvalid(got)) {
            // Refused for another reason (jsonrpc "1.0"), never for its names.
            expect(got.message).not.to.match(/member names/);
            return;
          }
          accepted++;
          const call = got as Call;
          expect(call.method).to.equal(plain(field(go, 'method')));
          expect(call.params).to.deep.equal(plain(field(go, 'params')));
          expect(JSON.parse(call.id as string)).to.deep.equal(plain(field(go, 'id')));
          const p = field(go, 'params');
          if (p !== undefined) sameFields(call.params, p);
        });
      }),
      { numRuns: 1500 },
    );
    // The property says something only if both outcomes happen often.
    expect(accepted, `accepted ${accepted}`).to.be.above(300);
    expect(refused, `refused ${refused}`).to.be.above(300);
  });
});
