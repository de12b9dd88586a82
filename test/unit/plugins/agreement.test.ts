// What "the same answer" means (the SDK's agreement rules and the plugins' choices).

import { expect } from 'chai';
import { canonicalJson, jsonRpcHighest, jsonRpcSame, jsonSame } from '../../../src/sdk/agreement.js';
import evm from '../../../plugins/evm/index.js';
import { DEFAULT_JSONRPC_LIMITS, type JsonRpcCall } from '../../../src/sdk/index.js';

const item = (method: string, params: unknown[]): JsonRpcCall<undefined> => ({
  kind: 'jsonrpc',
  method,
  params,
  id: '1',
  raw: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  meta: undefined,
});

describe('agreement rules', () => {
  it('compares JSON with members in one order and ignored fields left out, never the envelope', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }, new Set())).to.equal('{"a":[{"c":3,"d":2}],"b":1}');
    const same = jsonRpcSame(['timestamp']);
    const a = same.canonical('{"jsonrpc":"2.0","id":1,"result":{"x":"1","timestamp":5}}');
    const b = same.canonical('{"id":-1,"jsonrpc":"2.0","result":{"timestamp":9,"x":"1"}}');
    expect(a).to.equal(b);
    expect(same.canonical('{"id":1,"result":{"x":"2"}}')).to.not.equal(a);
    expect(same.canonical('{"id":1,"error":{"code":3,"message":"reverted"}}')).to.match(/^error:/);
    expect(same.canonical('not json')).to.equal(undefined);
    expect(jsonSame().canonical('{"b":1,"a":2}')).to.equal('{"a":2,"b":1}');
  });

  it('reads numbers where the highest wins', () => {
    expect(jsonRpcHighest.canonical('{"id":1,"result":"0x1f"}')).to.equal('31');
    expect(jsonRpcHighest.canonical('{"id":1,"result":"12"}')).to.equal('12');
    expect(jsonRpcHighest.canonical('{"id":1,"result":{"a":1}}')).to.equal(undefined);
  });

  it('EVM: compares state at a fixed block, not at pending; nonces and gas prices by the highest', () => {
    const h = evm.create({ chain: 'l1', options: {}, limits: DEFAULT_JSONRPC_LIMITS });
    const rule = (m: string, p: unknown[]) => h.agreement?.rule(item(m, p));
    expect(h.agreement?.defaults).to.include('eth_getBalance');
    expect(rule('eth_getBalance', ['0xaa', '0x10'])?.kind).to.equal('same');
    expect(rule('eth_getBalance', ['0xaa', 'pending'])).to.equal(undefined);
    expect(rule('eth_getBalance', ['0xaa', 'latest'])).to.equal(undefined);
    expect(rule('eth_getTransactionCount', ['0xaa', 'pending'])?.kind).to.equal('highest');
    expect(rule('eth_gasPrice', [])?.kind).to.equal('highest');
    expect(rule('eth_blockNumber', [])).to.equal(undefined);
  });
});
