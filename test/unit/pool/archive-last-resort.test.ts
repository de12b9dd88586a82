// Issue 27.1 in its parts: which calls the evm plugin says full nodes hold all of
// (`fullHolds`), and the pool leaving archive nodes out of an ordinary call's last
// resort when asked to (a key without archive access, a call full nodes may not hold).

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import type { PoolView, Routing } from '../../../src/plugin/contract.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { DEFAULT_UPSTREAM_OPTIONS } from '../../../src/pool/upstream.js';
import { chainConfig } from '../../support/chain.js';
import { call, handler } from '../plugins/helpers.js';

const view: PoolView = { head: 1000, fullEarliest: undefined };
const HASH = `0x${'ab'.repeat(32)}`;
const ADDR = '0x00000000000000000000000000000000000000aa';

describe('archive nodes as the last resort, by what full nodes hold', () => {
  describe('evm classify: fullHolds', () => {
    const h = handler(evm, { fullHistory: 128, finalityDepth: 64, blockTimeMs: 1000 });
    const holds = (method: string, params: unknown, v: PoolView = view): boolean => h.classify(call(method, params), v).fullHolds === true;

    it('marks the head, tags, numbers within fullHistory, constants and submits', () => {
      expect(holds('eth_blockNumber', [])).to.equal(true);
      expect(holds('eth_chainId', [])).to.equal(true);
      expect(holds('eth_gasPrice', [])).to.equal(true);
      expect(holds('eth_sendRawTransaction', ['0x00'])).to.equal(true);
      for (const at of ['latest', 'pending', 'safe', 'finalized', '0x368', { blockNumber: '0x3e0' }])
        expect(holds('eth_getBalance', [ADDR, at]), JSON.stringify(at)).to.equal(true);
      expect(holds('eth_getLogs', [{ fromBlock: '0x3e0', toBlock: 'latest' }])).to.equal(true);
    });

    it('leaves unmarked what may reach further back: hashes, old or unplaced numbers, transactions, filters, unknown methods', () => {
      expect(holds('eth_getBalance', [ADDR, { blockHash: HASH }])).to.equal(false);
      expect(holds('eth_getTransactionCount', [ADDR, HASH])).to.equal(false);
      expect(holds('eth_getBlockByHash', [HASH, false])).to.equal(false);
      expect(holds('eth_getLogs', [{ blockHash: HASH }])).to.equal(false);
      // A range that starts before the full nodes' history, or a number before any head is known.
      expect(holds('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'latest' }])).to.equal(false);
      expect(holds('eth_getBalance', [ADDR, '0x3e0'], { head: undefined, fullEarliest: undefined })).to.equal(false);
      expect(holds('eth_getBalance', [ADDR, 'earliest'])).to.equal(false);
      expect(holds('eth_getTransactionReceipt', [HASH])).to.equal(false);
      expect(holds('eth_newFilter', [{ fromBlock: '0x1' }])).to.equal(false);
      expect(holds('eth_getFilterLogs', ['0x1'])).to.equal(false);
      expect(holds('eth_someNewMethod', [])).to.equal(false);
    });

    it('reads an old block in every spelling some node executes, and holds nothing it cannot read', () => {
      const h1 = h.classify(call('eth_getBalance', [ADDR, `0X${HASH.slice(2)}`]), view);
      expect(h1.fullHolds).to.not.equal(true);
      expect(h1.archive).to.equal(false);
      // geth's "0X", Reth's leading zeros, erigon's decimal string and JSON number: all block 5, older than fullHistory.
      for (const at of ['0X5', '0x0000000000000005', '0x00000000000000000005', '5', 5, { blockNumber: '0x0000000000000005' }]) {
        const r = h.classify(call('eth_getBalance', [ADDR, at]), view);
        expect(r.archive, JSON.stringify(at)).to.equal(true);
        expect(r.fullHolds, JSON.stringify(at)).to.equal(false);
      }
      // A value no node places, or one only some would: never held, never cached.
      for (const at of [null, {}, [], 'Latest', '0xzz', -1, 1.5]) {
        const r = h.classify(call('eth_getBalance', [ADDR, at]), view);
        expect(r.fullHolds, JSON.stringify(at)).to.not.equal(true);
        expect(r.cacheTtlMs, JSON.stringify(at)).to.equal(undefined);
      }
      // A getLogs range from a padded number is charged for its span like the plain one.
      const padded = h.classify(call('eth_getLogs', [{ fromBlock: '0x0000000000000001', toBlock: 'latest' }]), view);
      const plain = h.classify(call('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'latest' }]), view);
      expect(padded.cost).to.equal(plain.cost);
      expect(padded.archive).to.equal(true);
    });
  });

  describe('NodePool.select', () => {
    const PLAIN: Routing = { archive: false, cost: 1, label: 'm' };
    let pool: NodePool;
    let full1: PoolNode;
    let full2: PoolNode;
    let arch: PoolNode;

    beforeEach(async () => {
      const URL = 'http://127.0.0.1:9';
      const config = await chainConfig([
        { name: 'full-1', url: URL, role: 'full' },
        { name: 'full-2', url: URL, role: 'full' },
        { name: 'arch', url: URL, role: 'archive' },
      ]);
      pool = new NodePool(config, {}, DEFAULT_UPSTREAM_OPTIONS, undefined, () => 1_000_000);
      [full1, full2, arch] = pool.nodes as [PoolNode, PoolNode, PoolNode];
    });
    afterEach(() => pool.close());

    it('gives no archive node to an ordinary call whose last resort excludes them, and still gives full nodes', () => {
      const tried = new Set([full1, full2]);
      expect(pool.select(PLAIN, tried)).to.equal(arch);
      expect(pool.select(PLAIN, tried, undefined, false)).to.equal(undefined);
      expect(pool.select(PLAIN, new Set([full1]), undefined, false)).to.equal(full2);
    });
  });
});
