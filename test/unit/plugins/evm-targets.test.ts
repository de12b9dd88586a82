// The contracts EVM calls are directed at, as the evm plugin names them for keys
// restricted to some contracts: `to` of simulated transactions, `address` of log
// filters and subscriptions; none (any contract) for deployments, state overrides,
// filters without addresses and multi-call simulations; and the member names it reads
// spelt exactly (a Go node would read `To` as `to`).

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import type { PoolView } from '../../../src/plugin/contract.js';
import { call, handler, jsonrpc, post } from './helpers.js';

const view: PoolView = { head: 1000, fullEarliest: undefined };
const A = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const a = A.toLowerCase();
const B = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';

describe('evm plugin: the contracts a call targets', () => {
  const h = handler(evm, { fullHistory: 128 });
  const targets = (method: string, params: unknown): readonly string[] | undefined | 'none' => {
    const c = call(method, params);
    const reader = h.classify(c, view).targets;
    return reader === undefined ? 'none' : reader.of(c);
  };

  it('names the `to` of simulated transactions, in lower case', () => {
    for (const m of ['eth_call', 'evm_call', 'eth_estimateGas', 'eth_createAccessList']) {
      expect(targets(m, [{ to: A, data: '0x' }, 'latest']), m).to.deep.equal([a]);
    }
    expect(targets('debug_traceCall', [{ to: A }, 'latest', { tracer: 'callTracer' }])).to.deep.equal([a]);
    expect(targets('trace_call', [{ to: A }, ['trace'], 'latest'])).to.deep.equal([a]);
    expect(
      targets('trace_callMany', [
        [
          [{ to: A }, ['trace']],
          [{ to: B }, ['trace']],
        ],
        'latest',
      ]),
    ).to.deep.equal([a, B]);
    // The same at an old block (archive) or a pinned number.
    expect(targets('eth_call', [{ to: A }, '0x1'])).to.deep.equal([a]);
  });

  it('names no contract (any) for deployments, state overrides and calls it cannot read', () => {
    expect(targets('eth_call', [{ data: '0x6080' }, 'latest'])).to.deep.equal([]);
    expect(targets('eth_call', [{ to: null, data: '0x6080' }, 'latest'])).to.deep.equal([]);
    expect(targets('eth_call', [{ to: A }, 'latest', { [B]: { code: '0x00' } }])).to.deep.equal([]);
    expect(targets('eth_estimateGas', [{ to: A }, 'latest', { [A]: { balance: '0x1' } }])).to.deep.equal([]);
    // An empty override object overrides nothing.
    expect(targets('eth_call', [{ to: A }, 'latest', {}])).to.deep.equal([a]);
    expect(targets('debug_traceCall', [{ to: A }, 'latest', { stateOverrides: { [B]: { code: '0x00' } } }])).to.deep.equal([]);
    expect(targets('eth_call', 'not a list')).to.deep.equal([]);
    expect(targets('trace_callMany', [[[{ data: '0x' }, ['trace']]]])).to.deep.equal([]);
    for (const m of ['eth_simulateV1', 'eth_callMany', 'eth_callBundle', 'debug_traceCallMany'])
      expect(targets(m, [{}]), m).to.deep.equal([]);
  });

  it('names the addresses of log filters, one or a list; none without', () => {
    expect(targets('eth_getLogs', [{ address: A, fromBlock: '0x1', toBlock: '0x2' }])).to.deep.equal([a]);
    expect(targets('eth_getLogs', [{ address: [A, B] }])).to.deep.equal([a, B]);
    expect(targets('eth_getLogs', [{ blockHash: `0x${'ab'.repeat(32)}`, address: A }])).to.deep.equal([a]);
    expect(targets('eth_getLogs', [{ topics: [] }])).to.deep.equal([]);
    expect(targets('eth_getLogs', [{ address: [] }])).to.deep.equal([]);
    expect(targets('eth_getLogs', [{ address: [A, 7] }])).to.deep.equal([]);
    expect(targets('eth_newFilter', [{ address: A }])).to.deep.equal([a]);
    expect(targets('eth_newFilter', [{}])).to.deep.equal([]);
    expect(targets('trace_filter', [{ toAddress: [A] }])).to.deep.equal([a]);
    expect(targets('trace_filter', [{ fromAddress: [A] }])).to.deep.equal([]);
  });

  it('names the address of a logs subscription; other subscriptions target nothing', () => {
    expect(targets('eth_subscribe', ['logs', { address: A }])).to.deep.equal([a]);
    expect(targets('eth_subscribe', ['logs', {}])).to.deep.equal([]);
    expect(targets('eth_subscribe', ['logs'])).to.deep.equal([]);
    expect(targets('eth_subscribe', ['newHeads'])).to.equal(undefined);
  });

  it('leaves every other call without targets', () => {
    for (const [m, p] of [
      ['eth_blockNumber', []],
      ['eth_getBalance', [A, 'latest']],
      ['eth_getStorageAt', [A, '0x0', 'latest']],
      ['eth_sendRawTransaction', ['0x02']],
      ['eth_getTransactionReceipt', [`0x${'11'.repeat(32)}`]],
      ['eth_newBlockFilter', []],
      ['web3_clientVersion', []],
      ['eth_somethingNew', [{ to: A }]],
    ] as const) {
      expect(targets(m, p), m).to.equal('none');
    }
  });

  it('refuses the names it reads spelt otherwise, as a Go node would read them as the same member', () => {
    for (const body of [
      `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"To":"${B}"},"latest"]}`,
      `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"ADDRESS":"${B}"}]}`,
      `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"addreſſ":"${B}"}]}`,
      `{"jsonrpc":"2.0","id":1,"method":"debug_traceCall","params":[{"to":"${A}"},"latest",{"StateOverrides":{}}]}`,
      `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"${A}","TO":"${B}"},"latest"]}`,
    ]) {
      const item = jsonrpc(h.parse(post(body))).items[0];
      expect(item?.kind, body).to.equal('invalid');
    }
  });
});
