// Real EVM clients against real nodes through the gateway: viem and ethers talk to a
// chain of anvils (one archive, one pruned full node), and every check also looks at
// the other side: which node served the call, that no node saw the key, and metrics.

import { expect } from 'chai';
import { FetchRequest, JsonRpcProvider } from 'ethers';
import { createPublicClient, createWalletClient, http, parseEther, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createLogger } from '../../src/ops/log.js';
import { Anvil, broadcast, mineAll } from '../support/anvil.js';
import { get, startStack, type Stack } from '../support/harness.js';

/** anvil's first default account. */
const KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const ME = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
/** init code returning runtime `PUSH1 42 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN` (answers 42). */
const ANSWER_42 = '0x600a600c600039600a6000f3602a60005260206000f3';
/** init code returning runtime `PUSH1 0 PUSH1 0 REVERT`. */
const REVERTER = '0x6005600c60003960056000f360006000fd';
/** init code returning runtime `PUSH1 0 PUSH1 0 LOG0 STOP` (one empty log per call). */
const LOGGER = '0x6006600c60003960066000f360006000a000';

describe('real EVM nodes and clients: anvil, viem, ethers', function () {
  this.timeout(60_000);
  let archive: Anvil;
  let full: Anvil;
  let stack: Stack;
  let block = 0;
  const lines: string[] = [];
  const url = (): string => stack.url('/anvil');
  const headers = (): Record<string, string> => ({ apikey: stack.key });
  const servedBy = (method: string): string[] =>
    lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.msg === 'request' && r.method === method)
      .map((r) => String(r.node));

  /** Sign locally, send through the gateway, let the other node have it too, mine. */
  async function transact(data: Hex | undefined, to?: Hex): Promise<Hex> {
    const account = privateKeyToAccount(KEY);
    const wallet = createWalletClient({ account, transport: http(url(), { fetchOptions: { headers: headers() } }) });
    const client = createPublicClient({ transport: http(url(), { fetchOptions: { headers: headers() } }) });
    const request = await wallet.prepareTransactionRequest({
      account,
      to: to ?? null,
      data,
      value: to === undefined ? 0n : 0n,
      chain: null,
      gas: 200_000n,
    });
    const raw = await wallet.signTransaction({ ...request, chain: null });
    const hash = await client.sendRawTransaction({ serializedTransaction: raw });
    await broadcast([archive, full], raw);
    await mineAll([archive, full], ++block);
    return hash;
  }

  before(async () => {
    archive = await Anvil.start();
    full = await Anvil.start(['--prune-history', '4']);
    for (let i = 0; i < 12; i++) await mineAll([archive, full], ++block);
    stack = await startStack({
      chains: [
        {
          name: 'anvil',
          plugin: 'evm',
          path: '/anvil',
          // The gateway believes full nodes keep 1000 blocks: old reads try the full node,
          // whose real pruned answer sends them on to the archive.
          extra: '    options: { fullHistory: 1000 }',
          nodes: [
            { name: 'anvil-full', role: 'full' },
            { name: 'anvil-archive', role: 'archive' },
          ],
        },
        {
          // The same nodes behind an endpoint that verifies blocks (see 'verify: enforce').
          name: 'anvil-verified',
          plugin: 'evm',
          path: '/anvil-verified',
          extra: '    verify: enforce\n    options: { fullHistory: 1000 }',
          nodes: [
            { name: 'verified-full', role: 'full', sameAs: 'anvil-full' },
            { name: 'verified-archive', role: 'archive', sameAs: 'anvil-archive' },
          ],
        },
      ],
      externalNodes: new Map([
        ['anvil-full', full.url],
        ['anvil-archive', archive.url],
      ]),
      logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
    });
  });
  after(async () => {
    await stack?.close();
    await archive?.stop();
    await full?.stop();
  });

  describe('viem', () => {
    const client = () => createPublicClient({ transport: http(url(), { fetchOptions: { headers: headers() } }) });

    it('reads chain id and block number from the full node', async () => {
      expect(await client().getChainId()).to.equal(31337);
      expect(await client().getBlockNumber()).to.equal(BigInt(block));
      expect(servedBy('eth_blockNumber')).to.deep.equal(['anvil-full']);
    });

    it('reads a balance at latest from the full node and at an old block from the archive', async () => {
      expect((await client().getBalance({ address: ME })) > parseEther('9000')).to.equal(true);
      expect(servedBy('eth_getBalance').pop()).to.equal('anvil-full');
      const old = await client().getBalance({ address: ME, blockNumber: 1n });
      expect(old).to.equal(parseEther('10000'));
      expect(servedBy('eth_getBalance').pop()).to.equal('anvil-archive');
      // The full node said so in its own words first.
      expect(full.received.some((r) => r.body.includes('"eth_getBalance"') && r.body.includes('"0x1"'))).to.equal(true);
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_retries_total\{chain="anvil",reason="pruned"\} [1-9]/);
    });

    it('deploys a contract, calls it, and finds its logs and receipts', async () => {
      const deploy = await transact(ANSWER_42);
      const receipt = await client().getTransactionReceipt({ hash: deploy });
      expect(receipt.status).to.equal('success');
      const answer = await client().call({ to: receipt.contractAddress as Hex, data: '0x' });
      expect(BigInt(answer.data as Hex)).to.equal(42n);
      const logger = await client().getTransactionReceipt({ hash: await transact(LOGGER) });
      const tx = await transact('0x', logger.contractAddress as Hex);
      const logged = await client().getTransactionReceipt({ hash: tx });
      expect(logged.logs).to.have.length(1);
      const logs = await client().getLogs({ address: logger.contractAddress as Hex, fromBlock: 0n, toBlock: 'latest' });
      expect(logs.map((l) => l.transactionHash)).to.deep.equal([tx]);
    });

    it('sends a batch through viem’s batch transport', async () => {
      const batched = createPublicClient({ transport: http(url(), { batch: true, fetchOptions: { headers: headers() } }) });
      const [f0, a0] = [full.received.length, archive.received.length];
      const [n, id, balance] = await Promise.all([batched.getBlockNumber(), batched.getChainId(), batched.getBalance({ address: ME })]);
      expect(n).to.equal(BigInt(block));
      expect(id).to.equal(31337);
      expect(balance > 0n).to.equal(true);
      const seen = [...full.received.slice(f0), ...archive.received.slice(a0)];
      expect(seen.filter((r) => r.body.startsWith('['))).to.have.length(1);
    });

    it('relays a revert as the node’s own error', async () => {
      const reverter = await client().getTransactionReceipt({ hash: await transact(REVERTER) });
      let message = '';
      await client()
        .call({ to: reverter.contractAddress as Hex, data: '0x' })
        .catch((err: Error) => (message = err.message));
      expect(message).to.match(/revert/i);
    });
  });

  describe('ethers', () => {
    const provider = (): JsonRpcProvider => {
      const req = new FetchRequest(url());
      req.setHeader('apikey', stack.key);
      return new JsonRpcProvider(req, 31337, { staticNetwork: true, batchMaxCount: 1 });
    };

    it('reads block number, balances now and then, and calls a contract', async () => {
      const p = provider();
      expect(await p.getBlockNumber()).to.equal(block);
      expect(await p.getBalance(ME, 1)).to.equal(parseEther('10000'));
      expect(servedBy('eth_getBalance').pop()).to.equal('anvil-archive');
      const deploy = await transact(ANSWER_42);
      const receipt = await p.getTransactionReceipt(deploy);
      expect(receipt?.status).to.equal(1);
      expect(BigInt(await p.call({ to: receipt?.contractAddress, data: '0x' }))).to.equal(42n);
      p.destroy();
    });

    it('surfaces a revert as CALL_EXCEPTION', async () => {
      const p = provider();
      const reverter = await p.getTransactionReceipt(await transact(REVERTER));
      let code = '';
      await p.call({ to: reverter?.contractAddress, data: '0x' }).catch((err: { code: string }) => (code = err.code));
      expect(code).to.equal('CALL_EXCEPTION');
      p.destroy();
    });
  });

  describe('verify: enforce', () => {
    it('passes anvil’s real blocks, full transactions, transactions and receipts, and counts them verified', async () => {
      const verified = createPublicClient({
        transport: http(stack.url('/anvil-verified'), { fetchOptions: { headers: headers() } }),
      });
      const hash = await transact(ANSWER_42);
      const receipt = await verified.getTransactionReceipt({ hash });
      expect(receipt.status).to.equal('success');
      const withTx = await verified.getBlock({ blockNumber: receipt.blockNumber, includeTransactions: true });
      expect(withTx.hash).to.equal(receipt.blockHash);
      expect(withTx.transactions.map((t) => t.hash)).to.include(hash);
      expect((await verified.getBlock({ blockHash: receipt.blockHash })).number).to.equal(receipt.blockNumber);
      expect((await verified.getBlock()).number).to.equal(BigInt(block));
      expect((await verified.getTransaction({ hash })).hash).to.equal(hash);
      await stack.gateway
        .runtimes()
        .find((r) => r.name === 'anvil-verified')
        ?.prober.probeAll();

      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.not.match(/noderouter_answer_checks_total\{chain="anvil-verified",[^}]*result="mismatch"\}/);
      for (const method of ['eth_getBlockByNumber', 'eth_getBlockByHash', 'eth_getTransactionByHash', 'eth_getTransactionReceipt']) {
        expect(metrics).to.match(
          new RegExp(
            `noderouter_answer_checks_total\\{chain="anvil-verified",node="verified-(full|archive)",method="${method}",result="verified"\\} [1-9]`,
          ),
        );
      }
      expect(metrics).to.match(
        /noderouter_answer_checks_total\{chain="anvil-verified",node="verified-full",method="probe",result="verified"\} [1-9]/,
      );
    });
  });

  describe('the nodes’ side', () => {
    it('never lets a node see the key, and counts every call in metrics', async () => {
      for (const r of [...full.received, ...archive.received]) {
        expect(JSON.stringify(r)).to.not.contain(stack.key);
        expect(Object.keys(r.headers)).to.not.include('apikey');
      }
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_upstream_requests_total\{chain="anvil",node="anvil-full",outcome="ok"\} [1-9]/);
      expect(metrics).to.match(/noderouter_upstream_requests_total\{chain="anvil",node="anvil-archive",outcome="ok"\} [1-9]/);
      expect(metrics).to.match(/noderouter_requests_total\{chain="anvil",method="eth_getBalance",outcome="ok",transport="http"\} [1-9]/);
    });
  });
});
