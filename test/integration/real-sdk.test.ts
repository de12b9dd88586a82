// Real SDK-chain and object-chain clients through the gateway: cosmjs's CometBFT
// client against the sdk-rpc endpoint and @mysten/sui's JSON-RPC client against the
// objectx endpoint, checking the node that answered, the key's absence and metrics.

import { expect } from 'chai';
import { Comet38Client, HttpClient } from '@cosmjs/tendermint-rpc';
import { SuiClient, SuiHTTPTransport } from '@mysten/sui/client';
import { get, startStack, type Stack } from '../support/harness.js';

describe('real SDK-chain and object-chain clients', function () {
  this.timeout(30_000);
  let stack: Stack;
  const noKeyAnywhere = (): void => {
    for (const n of stack.devnet.nodes.values()) {
      for (const r of n.received) expect(JSON.stringify(r)).to.not.contain(stack.key);
    }
  };

  before(async () => {
    stack = await startStack();
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  after(() => stack.close());

  describe('@cosmjs/tendermint-rpc', () => {
    const comet = () => Comet38Client.create(new HttpClient({ url: stack.url('/hub/rpc'), headers: { apikey: stack.key } }));

    it('reads status, abci_info and a recent block from a full node', async () => {
      for (const n of stack.devnet.nodes.values()) n.clearReceived();
      const c = await comet();
      const status = await c.status();
      const head = stack.devnet.chains.get('hub')?.height() as number;
      expect(status.syncInfo.latestBlockHeight).to.equal(head);
      expect(status.nodeInfo.network).to.equal('hub-devnet-1');
      const info = await c.abciInfo();
      expect(info.lastBlockHeight).to.equal(head);
      expect(info.data).to.be.a('string');
      const block = await c.block(head - 2);
      expect(block.block.header.height).to.equal(head - 2);
      expect(block.block.header.chainId).to.equal('hub-devnet-1');
      const fullCalls = stack.devnet.node('hub-rpc-full-1').received.filter((r) => r.body.includes('"block"'));
      expect(fullCalls).to.have.length(1);
      c.disconnect();
    });

    it('reads a block at an old height from the archive node', async () => {
      stack.devnet.node('hub-rpc-archive-1').clearReceived();
      const c = await comet();
      const old = await c.block(3);
      expect(old.block.header.height).to.equal(3);
      expect(stack.devnet.node('hub-rpc-archive-1').received.filter((r) => r.body.includes('"block"'))).to.have.length(1);
      c.disconnect();
      noKeyAnywhere();
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_requests_total\{chain="hub-rpc",method="block",outcome="ok",transport="http"\} [1-9]/);
      expect(metrics).to.match(/noderouter_archive_calls_total\{chain="hub-rpc"\} [1-9]/);
    });
  });

  describe('@mysten/sui', () => {
    const sui = () =>
      new SuiClient({ transport: new SuiHTTPTransport({ url: stack.url('/objectx'), rpc: { headers: { apikey: stack.key } } }) });
    const owner = `0x${'11'.repeat(32)}`;

    it('reads a balance with suix_getBalance and checkpoints with the real method names', async () => {
      for (const n of stack.devnet.nodes.values()) n.clearReceived();
      const balance = await sui().getBalance({ owner, coinType: '0x2::sui::SUI' });
      expect(balance.coinType).to.equal('0x2::sui::SUI');
      expect(balance.totalBalance).to.match(/^\d+$/);
      const seq = await sui().getLatestCheckpointSequenceNumber();
      expect(Number(seq)).to.equal(stack.devnet.chains.get('objectx')?.height());
      const recent = await sui().getCheckpoint({ id: String(Number(seq) - 1) });
      expect(recent.sequenceNumber).to.equal(String(Number(seq) - 1));
      const full = stack.devnet.node('objx-full-1').received.map((r) => r.body);
      expect(full.some((b) => b.includes('suix_getBalance'))).to.equal(true);
      expect(full.some((b) => b.includes('sui_getCheckpoint'))).to.equal(true);
    });

    it('reads an old checkpoint from the archive node', async () => {
      stack.devnet.node('objx-archive-1').clearReceived();
      const old = await sui().getCheckpoint({ id: '5' });
      expect(old.sequenceNumber).to.equal('5');
      expect(stack.devnet.node('objx-archive-1').received.filter((r) => r.body.includes('sui_getCheckpoint'))).to.have.length(1);
      noKeyAnywhere();
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_requests_total\{chain="objectx",method="suix_getBalance",outcome="ok",transport="http"\} [1-9]/);
    });
  });
});
