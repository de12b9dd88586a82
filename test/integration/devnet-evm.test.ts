// The devnet's EVM nodes as a dApp's client sees them over HTTP and WebSocket: filters
// kept per node (and dropped when nobody polls them), raw transactions into a node's
// pool and the next block, and getLogs within the node's range limit.

import { expect } from 'chai';
import { keccak256, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

const LOG_ADDRESS = '0x00000000000000000000000000000000000000aa';
const ACCOUNT = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');

interface Reply {
  readonly result?: unknown;
  readonly error?: { code: number; message: string };
}

describe('devnet EVM nodes', function () {
  this.timeout(15_000);
  let devnet: Devnet;
  let clock = 1_000_000;
  let nonce = 0;

  const rpc = async (node: string, method: string, params: unknown[] = []): Promise<Reply> => {
    const res = await fetch(devnet.node(node).url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    return (await res.json()) as Reply;
  };
  const result = async <T>(node: string, method: string, params: unknown[] = []): Promise<T> => {
    const r = await rpc(node, method, params);
    if (r.error !== undefined) throw new Error(`${method}: ${r.error.message}`);
    return r.result as T;
  };
  const mine = (blocks = 1): void => devnet.chains.get('l1')?.advance(blocks);
  const head = (): number => devnet.node('a').height();
  const hex = (n: number): string => `0x${n.toString(16)}`;
  const signed = (chainId = 1): Promise<Hex> =>
    ACCOUNT.signTransaction({
      chainId,
      to: '0x00000000000000000000000000000000000000bb',
      value: 5n,
      nonce: nonce++,
      gas: 21_000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });

  before(async () => {
    devnet = await startDevnet(
      [
        { network: 'l1', family: 'evm', name: 'a', role: 'full' },
        { network: 'l1', family: 'evm', name: 'b', role: 'full' },
        { network: 'l1', family: 'evm', name: 'c', role: 'archive' },
      ],
      { blockTimeMs: 0, startHeight: 1_000, filterTimeoutMs: 60_000, maxLogsRange: 500, now: () => clock },
    );
  });
  after(() => devnet.close());
  afterEach(async () => {
    for (const n of devnet.nodes.values()) await n.clearFaults();
  });

  describe('filters', () => {
    it('a block filter answers a geth-style id and the hashes of the blocks since the last poll', async () => {
      const id = await result<string>('a', 'eth_newBlockFilter');
      expect(id).to.match(/^0x[1-9a-f][0-9a-f]{0,31}$/);
      const from = head();
      mine(3);
      const hashes = await result<string[]>('a', 'eth_getFilterChanges', [id]);
      const blocks = await Promise.all([1, 2, 3].map((i) => result<{ hash: string }>('b', 'eth_getBlockByNumber', [hex(from + i), false])));
      expect(hashes).to.deep.equal(blocks.map((b) => b.hash));
      expect(await result('a', 'eth_getFilterChanges', [id])).to.deep.equal([]);
      mine();
      expect(await result<string[]>('a', 'eth_getFilterChanges', [id])).to.have.length(1);
    });

    it('a filter is the node’s own: any other node answers geth’s "filter not found"', async () => {
      const id = await result<string>('a', 'eth_newBlockFilter');
      for (const method of ['eth_getFilterChanges', 'eth_getFilterLogs']) {
        expect(await rpc('b', method, [id])).to.deep.include({ error: { code: -32000, message: 'filter not found' } });
      }
      expect(await result('b', 'eth_uninstallFilter', [id])).to.equal(false);
      expect(await result('a', 'eth_uninstallFilter', [id])).to.equal(true);
      expect((await rpc('a', 'eth_getFilterChanges', [id])).error?.message).to.equal('filter not found');
      expect(await result('a', 'eth_uninstallFilter', [id])).to.equal(false);
    });

    it('a log filter answers the new matching logs at each poll, and all of them with getFilterLogs', async () => {
      const from = head() + 1;
      const id = await result<string>('a', 'eth_newFilter', [{ address: LOG_ADDRESS }]);
      const other = await result<string>('a', 'eth_newFilter', [{ address: '0x00000000000000000000000000000000000000cc' }]);
      const topic = await result<string>('a', 'eth_newFilter', [{ topics: [[`0x${'0'.repeat(64)}`]] }]);
      mine(40);
      const logs = await result<Array<{ blockNumber: string }>>('a', 'eth_getFilterChanges', [id]);
      const direct = await result<unknown[]>('c', 'eth_getLogs', [{ fromBlock: hex(from), toBlock: hex(from + 39), address: LOG_ADDRESS }]);
      expect(logs.length).to.be.greaterThan(0);
      expect(logs).to.deep.equal(direct);
      expect(await result('a', 'eth_getFilterChanges', [topic])).to.deep.equal(direct);
      expect(await result('a', 'eth_getFilterChanges', [other])).to.deep.equal([]);
      expect(await result('a', 'eth_getFilterChanges', [id])).to.deep.equal([]);
      // getFilterLogs runs the filter's criteria (from latest by default) as getLogs would.
      const ranged = await result<string>('a', 'eth_newFilter', [{ fromBlock: hex(from), address: LOG_ADDRESS }]);
      expect(await result('a', 'eth_getFilterLogs', [ranged])).to.deep.equal(direct);
      const blockFilter = await result<string>('a', 'eth_newBlockFilter');
      expect((await rpc('a', 'eth_getFilterLogs', [blockFilter])).error?.message).to.equal('filter not found');
    });

    it('refuses log filters as geth does', async () => {
      expect((await rpc('a', 'eth_newFilter', [{ fromBlock: '0x10', toBlock: '0x5' }])).error).to.deep.equal({
        code: -32000,
        message: 'invalid from and to block combination',
      });
      expect((await rpc('a', 'eth_newFilter', [{ fromBlock: 'yesterday' }])).error?.code).to.equal(-32602);
      expect((await rpc('a', 'eth_newFilter', [{ address: 7 }])).error?.code).to.equal(-32602);
      expect((await rpc('a', 'eth_newFilter', ['all'])).error?.code).to.equal(-32602);
    });

    it('a filter nobody polls for filterTimeoutMs is dropped; each poll keeps it another period', async () => {
      const id = await result<string>('a', 'eth_newBlockFilter');
      clock += 59_999;
      expect(await result('a', 'eth_getFilterChanges', [id])).to.deep.equal([]);
      clock += 59_999;
      expect(await result('a', 'eth_getFilterChanges', [id])).to.deep.equal([]);
      clock += 60_000;
      expect(await rpc('a', 'eth_getFilterChanges', [id])).to.deep.include({ error: { code: -32000, message: 'filter not found' } });
    });

    it('a pending-transaction filter sees the transactions sent to its node only', async () => {
      const mineFilter = await result<string>('a', 'eth_newPendingTransactionFilter');
      const toA = await signed();
      const toB = await signed();
      expect(await result('a', 'eth_sendRawTransaction', [toA])).to.equal(keccak256(toA));
      expect(await result('b', 'eth_sendRawTransaction', [toB])).to.equal(keccak256(toB));
      expect(await result('a', 'eth_getFilterChanges', [mineFilter])).to.deep.equal([keccak256(toA)]);
      expect(await result('a', 'eth_getFilterChanges', [mineFilter])).to.deep.equal([]);
      mine();
    });

    it('a filter made over HTTP is polled over a WebSocket to the same node', async () => {
      const id = await result<string>('a', 'eth_newBlockFilter');
      mine(2);
      const socket = await RpcSocket.open(wsUrl(devnet.node('a').url));
      try {
        expect((await socket.call('eth_getFilterChanges', [id])).result).to.have.length(2);
        const other = await RpcSocket.open(wsUrl(devnet.node('b').url));
        expect((await other.call('eth_getFilterChanges', [id])).error?.message).to.equal('filter not found');
        await other.close();
      } finally {
        await socket.close();
      }
    });
  });

  describe('transactions', () => {
    it('a raw transaction waits in its node’s pool, then the next block has it on every node', async () => {
      const raw = await signed();
      const hash = keccak256(raw);
      expect(await result('a', 'eth_sendRawTransaction', [raw])).to.equal(hash);
      expect(await rpc('a', 'eth_sendRawTransaction', [raw])).to.deep.include({ error: { code: -32000, message: 'already known' } });
      const pending = await result<Record<string, unknown>>('a', 'eth_getTransactionByHash', [hash]);
      expect(pending).to.deep.include({
        hash,
        blockNumber: null,
        blockHash: null,
        to: '0x00000000000000000000000000000000000000bb',
        value: '0x5',
      });
      expect(await result('b', 'eth_getTransactionByHash', [hash])).to.equal(null);
      expect(await result('a', 'eth_getTransactionReceipt', [hash])).to.equal(null);

      const height = head() + 1;
      mine();
      for (const node of ['a', 'b', 'c']) {
        const receipt = await result<Record<string, unknown>>(node, 'eth_getTransactionReceipt', [hash]);
        expect(receipt).to.deep.include({ transactionHash: hash, blockNumber: hex(height), status: '0x1', gasUsed: '0x5208' });
        const tx = await result<Record<string, unknown>>(node, 'eth_getTransactionByHash', [hash]);
        expect(tx).to.deep.include({ hash, blockNumber: hex(height), transactionIndex: '0x0' });
      }
      const block = await result<{ hash: string; transactions: string[] }>('b', 'eth_getBlockByNumber', [hex(height), false]);
      expect(block.transactions).to.deep.equal([hash]);
      const full = await result<{ transactions: Array<{ hash: string; blockHash: string }> }>('c', 'eth_getBlockByNumber', [
        hex(height),
        true,
      ]);
      expect(full.transactions.map((t) => [t.hash, t.blockHash])).to.deep.equal([[hash, block.hash]]);
      // Once mined, every node knows it: sending it again anywhere is not a new transaction.
      expect((await rpc('b', 'eth_sendRawTransaction', [raw])).error?.message).to.equal('already known');
      mine();
      expect((await result<{ transactions: string[] }>('a', 'eth_getBlockByNumber', ['latest', false])).transactions).to.deep.equal([]);
    });

    it('a node that is behind includes nothing until it follows the chain again, and loses nothing', async () => {
      await devnet.node('b').setFaults({ stalled: true });
      const raw = await signed();
      const hash = keccak256(raw);
      expect(await result('b', 'eth_sendRawTransaction', [raw])).to.equal(hash);
      mine(2);
      expect(await result('a', 'eth_getTransactionReceipt', [hash])).to.equal(null);
      await devnet.node('b').clearFaults();
      const height = head() + 1;
      mine();
      expect(await result<{ blockNumber: string }>('a', 'eth_getTransactionReceipt', [hash])).to.deep.include({ blockNumber: hex(height) });
    });

    it('a legacy transaction is read with its EIP-155 chain id', async () => {
      const raw = await ACCOUNT.signTransaction({
        type: 'legacy',
        chainId: 1,
        to: LOG_ADDRESS,
        value: 1n,
        nonce: nonce++,
        gas: 30_000n,
        gasPrice: 3n,
      });
      expect(await result('c', 'eth_sendRawTransaction', [raw])).to.equal(keccak256(raw));
      expect(await result('c', 'eth_getTransactionByHash', [keccak256(raw)])).to.deep.include({
        type: '0x0',
        chainId: '0x1',
        gasPrice: '0x3',
      });
      mine();
    });

    it('answers bad raw transactions as geth does', async () => {
      const error = async (raw: unknown): Promise<Reply['error']> => (await rpc('a', 'eth_sendRawTransaction', [raw])).error;
      expect((await error('f86b'))?.message).to.include('hex string without 0x prefix');
      expect((await error('0xf86'))?.message).to.include('hex string of odd length');
      expect((await error('0xzz'))?.message).to.include('invalid hex string');
      expect((await error(12))?.code).to.equal(-32602);
      expect(await error('0x')).to.deep.equal({ code: -32000, message: 'typed transaction too short' });
      expect(await error('0x05c0')).to.deep.equal({ code: -32000, message: 'transaction type not supported' });
      expect((await error('0xc3010203'))?.message).to.match(/^rlp: /);
      expect(await error(await signed(5))).to.deep.equal({
        code: -32000,
        message: 'invalid sender: invalid chain id for signer: have 5 want 1',
      });
      const short = await ACCOUNT.signTransaction({
        chainId: 1,
        to: LOG_ADDRESS,
        nonce: nonce++,
        gas: 20_000n,
        maxFeePerGas: 2n,
        maxPriorityFeePerGas: 1n,
      });
      expect((await error(short))?.message).to.equal('intrinsic gas too low: gas 20000, minimum needed 21000');
    });
  });

  describe('getLogs', () => {
    it('refuses a range wider than the node’s limit with a provider’s error, and answers one within it', async () => {
      const latest = head();
      expect(await rpc('c', 'eth_getLogs', [{ fromBlock: hex(latest - 500), toBlock: hex(latest) }])).to.deep.include({
        error: { code: -32005, message: 'query exceeds max block range 500' },
      });
      expect((await rpc('c', 'eth_getLogs', [{ fromBlock: hex(latest - 499), toBlock: hex(latest) }])).result).to.be.an('array');
    });

    it('takes a node’s own limit from the control server, and says so in the node list', async () => {
      const put = (body: string): Promise<Response> => fetch(`${devnet.controlUrl}/nodes/a/faults`, { method: 'PUT', body });
      expect((await put('{"maxLogsRange":10}')).status).to.equal(200);
      const range = [{ fromBlock: hex(head() - 10), toBlock: 'latest' }];
      expect((await rpc('a', 'eth_getLogs', range)).error?.message).to.equal('query exceeds max block range 10');
      expect((await rpc('b', 'eth_getLogs', range)).result).to.be.an('array');
      const list = (await (await fetch(`${devnet.controlUrl}/nodes`)).json()) as {
        settings: Record<string, unknown>;
        nodes: Array<{ name: string; faults: Record<string, unknown> }>;
      };
      expect(list.settings).to.deep.equal({ fullRetention: 128, filterTimeoutMs: 60_000, maxLogsRange: 500 });
      expect(list.nodes.find((n) => n.name === 'a')?.faults).to.deep.equal({ maxLogsRange: 10 });
      expect((await put('{"maxLogsRange":0}')).status).to.equal(400);
      expect((await put('{"maxLogsRange":"10"}')).status).to.equal(400);
    });

    it('filters logs by address and topics, and refuses a reversed range', async () => {
      const range = { fromBlock: hex(head() - 100), toBlock: 'latest' };
      const all = await result<unknown[]>('c', 'eth_getLogs', [range]);
      expect(all.length).to.be.greaterThan(0);
      expect(await result('c', 'eth_getLogs', [{ ...range, address: [LOG_ADDRESS.toUpperCase().replace('0X', '0x')] }])).to.deep.equal(all);
      expect(await result('c', 'eth_getLogs', [{ ...range, address: '0x00000000000000000000000000000000000000cc' }])).to.deep.equal([]);
      expect(await result('c', 'eth_getLogs', [{ ...range, topics: [null, null] }])).to.deep.equal([]);
      expect(await result('c', 'eth_getLogs', [{ ...range, topics: [`0x${'1'.repeat(64)}`] }])).to.deep.equal([]);
      expect((await rpc('c', 'eth_getLogs', [{ fromBlock: hex(head()), toBlock: hex(head() - 1) }])).error).to.deep.equal({
        code: -32000,
        message: 'invalid block range params',
      });
    });
  });
});

describe('devnet EVM nodes without a range limit', function () {
  this.timeout(15_000);

  it('refuses a query matching more than 10 000 logs, as providers do', async () => {
    const devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 'archive', role: 'archive' }], {
      blockTimeMs: 0,
      startHeight: 60_000,
      noControl: true,
    });
    try {
      const res = await fetch(devnet.node('archive').url, {
        method: 'POST',
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"earliest"}]}',
      });
      expect(((await res.json()) as Reply).error).to.deep.equal({ code: -32005, message: 'query returned more than 10000 results' });
    } finally {
      await devnet.close();
    }
  });
});
