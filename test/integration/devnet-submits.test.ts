// The devnet's submit calls as a client sees them: objectx executeTransactionBlock,
// CometBFT broadcast_tx_* (JSON-RPC and URI) and the SDK's REST broadcast. Each node
// accepts a transaction once, a resubmission gets the family's own "already" answer,
// and the network's next block includes it on every node.

import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { until } from '../support/until.js';

interface Reply {
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: { code: number; message: string; data?: unknown };
}

describe('devnet submit calls', function () {
  this.timeout(15_000);
  let devnet: Devnet;

  const rpc = async (node: string, method: string, params: unknown): Promise<Reply> => {
    const res = await fetch(devnet.node(node).url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) });
    return (await res.json()) as Reply;
  };
  const get = async (node: string, path: string): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${devnet.node(node).url}${path}`);
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const postTx = async (node: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${devnet.node(node).url}/cosmos/tx/v1beta1/txs`, { method: 'POST', body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const mine = (network: string): void => devnet.chains.get(network)?.advance(1);
  const cometHash = (text: string): string => createHash('sha256').update(text).digest('hex').toUpperCase();
  const b64 = (text: string): string => Buffer.from(text).toString('base64');

  before(async () => {
    devnet = await startDevnet(
      [
        { network: 'objx', family: 'objectx', name: 'o1', role: 'full' },
        { network: 'objx', family: 'objectx', name: 'o2', role: 'full' },
        { network: 'hub', family: 'sdk-rpc', name: 'r1', role: 'full' },
        { network: 'hub', family: 'sdk-rpc', name: 'r2', role: 'archive' },
        { network: 'hub', family: 'sdk-rest', name: 's1', role: 'full' },
      ],
      { blockTimeMs: 0, startHeight: 300, noControl: true },
    );
  });
  after(() => devnet.close());

  describe('objectx executeTransactionBlock', () => {
    it('executes once and answers the digest; a resubmission is "already executed"; the next checkpoint has it everywhere', async () => {
      const executed = await rpc('o1', 'sui_executeTransactionBlock', [b64('move call 1'), ['c2lnbmF0dXJl'], { showEffects: true }]);
      const result = executed.result as { digest: string; effects: { status: { status: string } }; confirmedLocalExecution: boolean };
      expect(result.digest).to.match(/^[1-9A-HJ-NP-Za-km-z]{43,44}$/);
      expect(result.effects.status.status).to.equal('success');
      expect(result.confirmedLocalExecution).to.equal(true);
      const again = await rpc('o1', 'suix_executeTransactionBlock', [b64('move call 1'), ['c2lnbmF0dXJl']]);
      expect(again.error).to.deep.equal({ code: -32002, message: `Transaction ${result.digest} has already been executed` });

      expect((await rpc('o1', 'sui_getTransactionBlock', [result.digest])).result).to.deep.equal({ digest: result.digest });
      expect((await rpc('o2', 'sui_getTransactionBlock', [result.digest])).error).to.deep.equal({
        code: -32602,
        message: `Could not find the referenced transaction [TransactionDigest(${result.digest})].`,
      });
      mine('objx');
      const seq = devnet.node('o2').height();
      const read = (await rpc('o2', 'sui_getTransactionBlock', [result.digest, { showEffects: true }])).result as Record<string, unknown>;
      expect(read).to.deep.include({ digest: result.digest, checkpoint: String(seq) });
      const checkpoint = (await rpc('o2', 'sui_getCheckpoint', [String(seq)])).result as { transactions: string[] };
      expect(checkpoint.transactions).to.deep.equal([result.digest]);
      expect((await rpc('o2', 'sui_executeTransactionBlock', [b64('move call 1'), ['c2lnbmF0dXJl']])).error?.code).to.equal(-32002);
    });

    it('refuses transaction bytes that are not base64 and a call without signatures', async () => {
      expect((await rpc('o1', 'sui_executeTransactionBlock', ['not base64!', ['c2ln']])).error?.code).to.equal(-32602);
      expect((await rpc('o1', 'sui_executeTransactionBlock', [b64('x'), []])).error?.code).to.equal(-32602);
    });
  });

  describe('CometBFT broadcast_tx_*', () => {
    it('accepts a transaction once; a resubmission gets "tx already exists in cache"; tx reads it back once mined', async () => {
      const sync = await rpc('r1', 'broadcast_tx_sync', { tx: b64('send 1') });
      expect(sync).to.deep.include({ id: 7, result: { code: 0, data: '', log: '', codespace: '', hash: cometHash('send 1') } });
      expect((await rpc('r1', 'broadcast_tx_async', [b64('send 1')])).error).to.deep.equal({
        code: -32603,
        message: 'Internal error',
        data: 'tx already exists in cache',
      });
      const byHash = { hash: Buffer.from(cometHash('send 1'), 'hex').toString('base64') };
      expect((await rpc('r2', 'tx', byHash)).error?.data).to.equal(`tx (${cometHash('send 1')}) not found`);
      mine('hub');
      const height = devnet.node('r2').height();
      expect((await rpc('r2', 'tx', byHash)).result).to.deep.include({
        hash: cometHash('send 1'),
        height: String(height),
        tx: b64('send 1'),
      });
      const block = (await rpc('r2', 'block', { height: String(height) })).result as { block: { data: { txs: string[] } } };
      expect(block.block.data.txs).to.deep.equal([b64('send 1')]);
      expect((await rpc('r2', 'broadcast_tx_sync', { tx: b64('send 1') })).error?.data).to.equal('tx already exists in cache');
    });

    it('takes the URI form (0x-hex or a quoted string) and answers it with id -1, a resubmission with HTTP 500', async () => {
      const hex = `0x${Buffer.from('send 2').toString('hex')}`;
      const first = await get('r1', `/broadcast_tx_async?tx=${hex}`);
      expect(first.status).to.equal(200);
      expect(first.json).to.deep.include({ id: -1, result: { code: 0, data: '', log: '', codespace: '', hash: cometHash('send 2') } });
      const again = await get('r1', `/broadcast_tx_sync?tx=${encodeURIComponent('"send 2"')}`);
      expect(again.status).to.equal(500);
      expect((again.json.error as { data: string }).data).to.equal('tx already exists in cache');
      expect((await get('r1', '/broadcast_tx_sync?tx=send')).status).to.equal(500);
      mine('hub');
      const read = await get('r2', `/tx?hash=0x${cometHash('send 2')}`);
      expect(read.json.result).to.deep.include({ hash: cometHash('send 2'), height: String(devnet.node('r2').height()) });
    });

    it('broadcast_tx_commit answers when the block that includes the transaction is made', async () => {
      const committed = rpc('r1', 'broadcast_tx_commit', { tx: b64('send 3') });
      // The node has the call (it is in its record) before the block is mined.
      await until(() => devnet.node('r1').received.some((r) => r.body.includes('broadcast_tx_commit')), { what: 'the node has the call' });
      mine('hub');
      const result = (await committed).result as { hash: string; height: string; check_tx: { code: number }; tx_result: { code: number } };
      expect(result).to.deep.include({ hash: cometHash('send 3'), height: String(devnet.node('r1').height()) });
      expect([result.check_tx.code, result.tx_result.code]).to.deep.equal([0, 0]);
    });

    it('refuses a tx that is not base64 bytes', async () => {
      expect((await rpc('r1', 'broadcast_tx_sync', { tx: 'not base64!' })).error?.code).to.equal(-32602);
      expect((await rpc('r1', 'broadcast_tx_sync', {})).error?.code).to.equal(-32602);
    });
  });

  describe('REST POST /cosmos/tx/v1beta1/txs', () => {
    it('accepts a transaction once, answers a resubmission with code 19, and reads it back once mined', async () => {
      const body = { tx_bytes: b64('send 4'), mode: 'BROADCAST_MODE_SYNC' };
      const first = await postTx('s1', body);
      expect(first.status).to.equal(200);
      expect(first.json.tx_response).to.deep.include({ txhash: cometHash('send 4'), code: 0, codespace: '', height: '0' });
      const again = await postTx('s1', { ...body, mode: 'BROADCAST_MODE_ASYNC' });
      expect(again.status).to.equal(200);
      expect(again.json.tx_response).to.deep.include({
        txhash: cometHash('send 4'),
        code: 19,
        codespace: 'sdk',
        raw_log: 'tx already in mempool',
      });
      expect((await get('s1', `/cosmos/tx/v1beta1/txs/${cometHash('send 4')}`)).status).to.equal(404);
      mine('hub');
      const height = String(devnet.node('s1').height());
      const read = await get('s1', `/cosmos/tx/v1beta1/txs/${cometHash('send 4')}`);
      expect(read.status).to.equal(200);
      expect(read.json.tx_response).to.deep.include({ txhash: cometHash('send 4'), height, code: 0 });
      // The hub's CometBFT nodes share the chain: the block there has it too.
      expect(
        ((await rpc('r2', 'tx', { hash: Buffer.from(cometHash('send 4'), 'hex').toString('base64') })).result as { height: string }).height,
      ).to.equal(height);
      const block = await get('s1', `/cosmos/base/tendermint/v1beta1/blocks/${height}`);
      expect((block.json.block as { data: { txs: string[] } }).data.txs).to.deep.equal([b64('send 4')]);
    });

    it('refuses an empty transaction, a body that is not JSON, and modes other than sync and async', async () => {
      expect((await postTx('s1', { tx_bytes: '', mode: 'BROADCAST_MODE_SYNC' })).json).to.deep.include({
        code: 3,
        message: 'invalid empty tx',
      });
      expect((await postTx('s1', { tx_bytes: b64('send 5'), mode: 'BROADCAST_MODE_BLOCK' })).status).to.equal(400);
      const res = await fetch(`${devnet.node('s1').url}/cosmos/tx/v1beta1/txs`, { method: 'POST', body: '{' });
      expect(res.status).to.equal(400);
    });
  });
});
