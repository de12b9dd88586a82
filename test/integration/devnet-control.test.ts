// The devnet's control server, as a person uses it to watch failover: list nodes,
// inject and clear faults, mine and reorganise blocks; bad input gets 400/404.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';

describe('devnet control server', function () {
  this.timeout(10_000);
  let devnet: Devnet;
  const control = (path: string, init?: RequestInit) => fetch(`${devnet.controlUrl}${path}`, init);

  before(async () => {
    devnet = await startDevnet(
      [
        { network: 'l1', family: 'evm', name: 'a', role: 'full' },
        { network: 'l1', family: 'evm', name: 'b', role: 'archive' },
      ],
      { blockTimeMs: 0, startHeight: 500, fullRetention: 10 },
    );
  });
  after(() => devnet.close());

  it('lists nodes with role, height and retention', async () => {
    const body = (await (await control('/nodes')).json()) as { nodes: Array<Record<string, unknown>> };
    expect(body.nodes.map((n) => [n.name, n.role, n.height, n.earliest])).to.deep.equal([
      ['a', 'full', 500, 491],
      ['b', 'archive', 500, 1],
    ]);
  });

  it('injects and clears faults at run time', async () => {
    const put = await control('/nodes/a/faults', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"status":503}',
    });
    expect(put.status).to.equal(200);
    const res = await fetch(devnet.node('a').url, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}' });
    expect(res.status).to.equal(503);
    await control('/nodes/a/faults', { method: 'PUT', body: '{"down":true}' });
    let refused = false;
    await fetch(devnet.node('a').url).catch(() => (refused = true));
    expect(refused).to.equal(true);
    expect((await control('/nodes/a/faults', { method: 'DELETE' })).status).to.equal(200);
    const ok = await fetch(devnet.node('a').url, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}' });
    expect(((await ok.json()) as { result: string }).result).to.equal('0x1f4');
  });

  it('makes a node claim a head above the chain (headOffset), and stop again', async () => {
    const blockNumber = async (): Promise<number> => {
      const r = await fetch(devnet.node('a').url, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}' });
      return Number(((await r.json()) as { result: string }).result);
    };
    const real = devnet.node('b').height();
    const put = await control('/nodes/a/faults', { method: 'PUT', body: '{"headOffset":1000}' });
    expect(put.status).to.equal(200);
    expect(await blockNumber()).to.equal(real + 1000);
    expect(devnet.node('b').height()).to.equal(real);
    expect((await control('/nodes/a/faults', { method: 'PUT', body: '{"headOffset":true}' })).status).to.equal(400);
    await control('/nodes/a/faults', { method: 'DELETE' });
    expect(await blockNumber()).to.equal(real);
  });

  it('mines and reorganises blocks', async () => {
    const before = devnet.node('b').height();
    const hashOf = async (): Promise<string> => {
      const r = await fetch(devnet.node('b').url, {
        method: 'POST',
        body: `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x${before.toString(16)}",false]}`,
      });
      return ((await r.json()) as { result: { hash: string } }).result.hash;
    };
    const h1 = await hashOf();
    expect(((await (await control('/chains/l1/advance?blocks=3', { method: 'POST' })).json()) as { height: number }).height).to.equal(
      before + 3,
    );
    await control('/chains/l1/reorg?depth=4', { method: 'POST' });
    expect(await hashOf()).to.not.equal(h1);
  });

  it('answers bad input with 400 and unknown names with 404', async () => {
    expect((await control('/nodes/zzz/faults', { method: 'DELETE' })).status).to.equal(404);
    expect((await control('/nodes/a/faults', { method: 'PUT', body: '{"explode":true}' })).status).to.equal(400);
    expect((await control('/nodes/a/faults', { method: 'PUT', body: 'nope' })).status).to.equal(400);
    expect((await control('/chains/l1/advance?blocks=-1', { method: 'POST' })).status).to.equal(400);
    expect((await control('/elsewhere')).status).to.equal(404);
  });
});

describe('devnet gRPC nodes through the control server', function () {
  this.timeout(10_000);
  let devnet: Devnet;
  let client: grpc.Client;
  const put = (body: string) => fetch(`${devnet.controlUrl}/nodes/g/faults`, { method: 'PUT', body });
  const params = (): Promise<number> =>
    new Promise((resolve) =>
      client.makeUnaryRequest(
        '/cosmos.auth.v1beta1.Query/Params',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        new grpc.Metadata(),
        { deadline: Date.now() + 2_000 },
        (err) => resolve(err === null ? 0 : err.code),
      ),
    );

  before(async () => {
    devnet = await startDevnet([{ network: 'hub', family: 'sdk-grpc', name: 'g', role: 'full' }], {
      blockTimeMs: 0,
      startHeight: 300,
      fullRetention: 10,
    });
    client = new grpc.Client(devnet.node('g').url.replace('http://', ''), grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await devnet.close();
  });

  it('lists the gRPC node and switches its faults: a gRPC status, down, cleared', async () => {
    const body = (await (await fetch(`${devnet.controlUrl}/nodes`)).json()) as { nodes: Array<Record<string, unknown>> };
    expect(body.nodes.map((n) => [n.name, n.family, n.height, n.earliest])).to.deep.equal([['g', 'sdk-grpc', 300, 291]]);
    expect(await params()).to.equal(0);
    expect((await put('{"status":14}')).status).to.equal(200);
    expect(await params()).to.equal(grpc.status.UNAVAILABLE);
    await put('{"down":true}');
    expect(await params()).to.equal(grpc.status.UNAVAILABLE);
    expect((await fetch(`${devnet.controlUrl}/nodes/g/faults`, { method: 'DELETE' })).status).to.equal(200);
    // A new client: the old one backs off before reconnecting to a node it saw refuse.
    client.close();
    client = new grpc.Client(devnet.node('g').url.replace('http://', ''), grpc.credentials.createInsecure());
    expect(await params()).to.equal(0);
    expect(devnet.node('g').received.map((r) => r.path)).to.include('/cosmos.auth.v1beta1.Query/Params');
  });
});
