// Block hashes recomputed from header fields (RLP + keccak-256), against real blocks:
// before London (mainnet 2000004), London (Ethereum mainnet 15571241, with its legacy and EIP-1559 transactions),
// Shanghai (Goerli 8705029, withdrawals root), Cancun (Goerli 10536893, blob gas,
// beacon root and blob transactions) and Prague (mainnet 23094898, requests hash), each
// as a node's JSON-RPC answer with the hash the chain gave it. Then what the EVM
// plugin's check says of answers, tampered ones included.

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { headerFields, headerHash } from '../../../plugins/evm/verify/header.js';
import { toHex } from '../../../plugins/evm/verify/hex.js';
import { checkAnswer, checkBlock } from '../../../plugins/evm/verify/index.js';
import { rlp } from '../../../plugins/evm/verify/rlp.js';
import { encodeTx } from '../../../plugins/evm/verify/transactions.js';
import { orderedTrieRoot } from '../../../plugins/evm/verify/trie.js';
import type { JsonRpcCall } from '../../../src/plugin/contract.js';

type Block = Record<string, unknown> & { hash: string; number: string; transactions: unknown[] };

function fixture(name: string): Block {
  return JSON.parse(readFileSync(new URL(`../../fixtures/evm-blocks/${name}.json`, import.meta.url), 'utf8')) as Block;
}

const HOMESTEAD = fixture('frontier-mainnet-2000004');
const LONDON = fixture('london-15571241-full');
const SHANGHAI = fixture('shanghai-goerli-8705029');
const CANCUN = fixture('cancun-goerli-10536893');
const PRAGUE = fixture('prague-mainnet-23094898');

function call(method: string, params: unknown[]): JsonRpcCall {
  const raw = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  return { kind: 'jsonrpc', method, params, id: '1', raw, meta: undefined };
}

function answer(result: unknown): { kind: 'jsonrpc'; status: number; text: string; error: undefined } {
  return { kind: 'jsonrpc', status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: 1, result }), error: undefined };
}

describe('EVM answer checks: block hashes from header fields', () => {
  describe('RLP and the trie', () => {
    it('encodes strings and lists as the yellow paper says', () => {
      const hex = (v: Parameters<typeof rlp>[0]): string => toHex(rlp(v));
      expect(hex(new Uint8Array(0))).to.equal('0x80');
      expect(hex(Uint8Array.of(0x7f))).to.equal('0x7f');
      expect(hex(Uint8Array.of(0x80))).to.equal('0x8180');
      expect(hex(Buffer.from('dog'))).to.equal('0x83646f67');
      expect(hex([Buffer.from('cat'), Buffer.from('dog')])).to.equal('0xc88363617483646f67');
      expect(hex([])).to.equal('0xc0');
      expect(hex(new Uint8Array(56).fill(1))).to.equal(`0xb838${'01'.repeat(56)}`);
    });

    it('gives the empty trie its well-known root', () => {
      expect(toHex(orderedTrieRoot([]))).to.equal('0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421');
    });
  });

  describe('every fork’s header, from real blocks', () => {
    const cases: Array<[string, Block, number]> = [
      ['before London (mainnet 2000004): the 15 original fields', HOMESTEAD, 15],
      ['London (mainnet 15571241): 16 fields', LONDON, 16],
      ['Shanghai (Goerli 8705029): + withdrawalsRoot', SHANGHAI, 17],
      ['Cancun (Goerli 10536893): + blobGasUsed, excessBlobGas, parentBeaconBlockRoot', CANCUN, 20],
      ['Prague (mainnet 23094898): + requestsHash', PRAGUE, 21],
    ];
    for (const [name, block, fields] of cases) {
      it(name, () => {
        expect(headerFields(block)).to.have.length(fields);
        expect(toHex(headerHash(block))).to.equal(block.hash);
      });
    }

    it('any changed field changes the hash', () => {
      for (const field of ['stateRoot', 'gasUsed', 'timestamp', 'extraData', 'parentBeaconBlockRoot']) {
        const v = String(PRAGUE[field]);
        const tampered = { ...PRAGUE, [field]: v === '0x' ? '0x01' : `${v.slice(0, -1)}${v.endsWith('0') ? '1' : '0'}` };
        expect(checkBlock(tampered, PRAGUE.number, false, false), field).to.equal('mismatch');
      }
    });
  });

  describe('transactions', () => {
    it('re-encodes legacy, EIP-1559 and blob transactions to their hashes', () => {
      for (const tx of [...LONDON.transactions, ...CANCUN.transactions] as Array<Record<string, unknown>>) {
        const encoded = encodeTx(tx);
        expect(encoded, String(tx.type)).to.not.equal(undefined);
        expect(toHex(keccak_256(encoded as Uint8Array))).to.equal(tx.hash);
      }
    });

    it('recomputes the transactions root of a block with full transactions', () => {
      const encoded = (LONDON.transactions as Array<Record<string, unknown>>).map((t) => encodeTx(t) as Uint8Array);
      expect(toHex(orderedTrieRoot(encoded))).to.equal(LONDON.transactionsRoot);
      expect(checkBlock(CANCUN, CANCUN.number, false, true)).to.equal('verified');
    });

    it('finds a transaction changed inside a block whose header is intact', () => {
      const txs = [...LONDON.transactions] as Array<Record<string, unknown>>;
      txs[3] = { ...txs[3], value: '0x1' };
      expect(checkBlock({ ...LONDON, transactions: txs }, LONDON.number, false, true)).to.equal('mismatch');
    });

    it('skips the root (not a mismatch) when a transaction type is unknown', () => {
      const txs = [...LONDON.transactions, { type: '0x7e', hash: LONDON.hash }];
      expect(checkBlock({ ...LONDON, transactions: txs }, LONDON.number, false, true)).to.equal('verified');
    });
  });

  describe('the plugin’s check of answers', () => {
    it('verifies blocks by number and by hash, full or not', () => {
      expect(checkAnswer(call('eth_getBlockByNumber', [LONDON.number, true]), answer(LONDON))).to.equal('verified');
      expect(checkAnswer(call('eth_getBlockByHash', [SHANGHAI.hash, false]), answer(SHANGHAI))).to.equal('verified');
      expect(checkAnswer(call('evm_getBlockByNumber', ['latest', false]), answer(PRAGUE), ['eth', 'evm'])).to.equal('verified');
      // Outside the chain's namespaces nothing is read (the method is a metric label).
      expect(checkAnswer(call('x1_getBlockByNumber', ['latest', false]), answer(PRAGUE), ['eth', 'evm'])).to.equal('unchecked');
    });

    it('refuses a block that is not the one asked for, or not a block', () => {
      expect(checkAnswer(call('eth_getBlockByHash', [LONDON.hash, false]), answer(SHANGHAI))).to.equal('mismatch');
      expect(checkAnswer(call('eth_getBlockByNumber', ['0x1', false]), answer(SHANGHAI))).to.equal('mismatch');
      expect(checkAnswer(call('eth_getBlockByNumber', ['latest', false]), answer({ ...PRAGUE, miner: 'nope' }))).to.equal('mismatch');
      const { baseFeePerGas: _b, ...gap } = PRAGUE;
      expect(checkAnswer(call('eth_getBlockByNumber', ['latest', false]), answer(gap))).to.equal('mismatch');
    });

    it('leaves alone what it cannot check: null, errors, pending blocks, other methods', () => {
      expect(checkAnswer(call('eth_getBlockByNumber', ['0x99999999', false]), answer(null))).to.equal('unchecked');
      expect(checkAnswer(call('eth_getBlockByNumber', ['pending', false]), answer({ ...PRAGUE, hash: null }))).to.equal('unchecked');
      expect(checkAnswer(call('eth_getBalance', ['0x00', 'latest']), answer('0x1'))).to.equal('unchecked');
      const error = { kind: 'jsonrpc' as const, status: 200, text: '{}', error: { code: -32000, message: 'header not found' } };
      expect(checkAnswer(call('eth_getBlockByNumber', ['0x1', false]), error)).to.equal('unchecked');
    });

    it('checks transactions by their hash and receipts by the hash asked for', () => {
      const tx = LONDON.transactions[7] as Record<string, unknown>;
      expect(checkAnswer(call('eth_getTransactionByHash', [tx.hash]), answer(tx))).to.equal('verified');
      expect(checkAnswer(call('eth_getTransactionByHash', [tx.hash]), answer({ ...tx, value: '0x2' }))).to.equal('mismatch');
      const receipt = { transactionHash: tx.hash, blockHash: LONDON.hash, status: '0x1' };
      expect(checkAnswer(call('eth_getTransactionReceipt', [tx.hash]), answer(receipt))).to.equal('verified');
      expect(checkAnswer(call('eth_getTransactionReceipt', [LONDON.hash]), answer(receipt))).to.equal('mismatch');
    });
  });
});
