// What each family's nodes say they serve (every plugin's describe), asked of real devnet
// nodes through the pool's own node clients: chain ids, clients, the oldest state held
// and the role it shows, EVM's optional namespaces, and another chain under the devnet's
// otherChain fault.

import { expect } from 'chai';
import { createHash } from 'node:crypto';
import evm from '../../../plugins/evm/index.js';
import objectx from '../../../plugins/objectx/index.js';
import sdkGrpc from '../../../plugins/sdk-grpc/index.js';
import sdkRest from '../../../plugins/sdk-rest/index.js';
import sdkRpc from '../../../plugins/sdk-rpc/index.js';
import { startDevnet, type Devnet } from '../../../src/devnet/index.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import type { ChainPlugin, NodeDescription } from '../../../src/plugin/contract.js';
import { PoolNode } from '../../../src/pool/pool-node.js';
import { UpstreamNode } from '../../../src/pool/upstream.js';

const BREAKER = { errorThresholdPercentage: 50, volumeThreshold: 5, rollingWindowMs: 10_000, resetTimeoutMs: 5_000 };
/** The devnet's chain at 1000 blocks; full nodes keep 128 of them. */
const FULL_EARLIEST = 1_000 - 128 + 1;

describe('what nodes say they serve (each plugin’s describe, against devnet nodes)', function () {
  this.timeout(20_000);
  let devnet: Devnet;
  const clients: PoolNode[] = [];

  before(async () => {
    const specs = [
      ['l1', 'evm'],
      ['hub', 'sdk-rpc'],
      ['hub', 'sdk-rest'],
      ['hub', 'sdk-grpc'],
      ['ox', 'objectx'],
    ].flatMap(([network, family]) =>
      (['full', 'archive'] as const).map((role) => ({
        network: network as string,
        family: family as string,
        name: `${family}-${role}`,
        role,
      })),
    );
    devnet = await startDevnet(specs, { blockTimeMs: 0, noControl: true, startHeight: 1_000 });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await devnet.close();
  });

  function describe_(plugin: ChainPlugin, name: string, options: Record<string, unknown> = {}): Promise<NodeDescription> {
    const url = devnet.node(name).url;
    const node = new PoolNode(
      { name, url, ws: url.replace(/^http/, 'ws'), headers: {}, role: undefined, weight: 1, priority: 0 },
      new UpstreamNode(url),
      BREAKER,
    );
    clients.push(node);
    const handler = plugin.create({ chain: 'c', options, limits: DEFAULT_JSONRPC_LIMITS });
    if (handler.describe === undefined) throw new Error(`${plugin.name} has no describe`);
    return handler.describe(node, 2_000);
  }

  async function underOtherChain(name: string, ask: () => Promise<NodeDescription>): Promise<NodeDescription> {
    await devnet.node(name).setFaults({ otherChain: true });
    try {
      return await ask();
    } finally {
      await devnet.node(name).clearFaults();
    }
  }

  it('evm: the chain id, the client, archive from state at block 1, a full node’s oldest state, and debug/trace where they answer', async () => {
    const client = 'Geth/v1.14.0-devnet/linux-amd64/go1.22';
    expect(await describe_(evm, 'evm-archive')).to.deep.equal({
      chainId: '1',
      client,
      role: 'archive',
      earliest: 1,
      namespaces: ['debug', 'trace'],
    });
    expect(await describe_(evm, 'evm-full')).to.deep.equal({ chainId: '1', client, role: 'full', earliest: FULL_EARLIEST, namespaces: [] });
    // The chain's namespace is the configured one.
    expect((await describe_(evm, 'evm-full', { namespaces: ['evm'] })).chainId).to.equal('1');
    expect((await underOtherChain('evm-full', () => describe_(evm, 'evm-full'))).chainId).to.equal('2');
  });

  it('sdk-rpc: the network id, the app and CometBFT versions, and the earliest height kept', async () => {
    const client = 'hubd v0.50.9-devnet, CometBFT 0.38.12';
    expect(await describe_(sdkRpc, 'sdk-rpc-archive')).to.deep.equal({ chainId: 'hub-devnet-1', client, earliest: 1, role: 'archive' });
    expect(await describe_(sdkRpc, 'sdk-rpc-full')).to.deep.equal({
      chainId: 'hub-devnet-1',
      client,
      earliest: FULL_EARLIEST,
      role: 'full',
    });
    expect((await underOtherChain('sdk-rpc-full', () => describe_(sdkRpc, 'sdk-rpc-full'))).chainId).to.equal('hub-other-1');
  });

  it('sdk-rest: the network id and app version from node_info, and the earliest store height', async () => {
    const client = 'hubd v0.50.9-devnet';
    expect(await describe_(sdkRest, 'sdk-rest-archive')).to.deep.equal({ chainId: 'hub-devnet-1', client, earliest: 1, role: 'archive' });
    expect(await describe_(sdkRest, 'sdk-rest-full')).to.deep.equal({
      chainId: 'hub-devnet-1',
      client,
      earliest: FULL_EARLIEST,
      role: 'full',
    });
    expect((await underOtherChain('sdk-rest-full', () => describe_(sdkRest, 'sdk-rest-full'))).chainId).to.equal('hub-other-1');
  });

  it('sdk-grpc: the network id and app version from GetNodeInfo, and the earliest store height', async () => {
    const client = 'hubd v0.50.9-devnet';
    expect(await describe_(sdkGrpc, 'sdk-grpc-archive')).to.deep.equal({ chainId: 'hub-devnet-1', client, earliest: 1, role: 'archive' });
    expect(await describe_(sdkGrpc, 'sdk-grpc-full')).to.deep.equal({
      chainId: 'hub-devnet-1',
      client,
      earliest: FULL_EARLIEST,
      role: 'full',
    });
    expect((await underOtherChain('sdk-grpc-full', () => describe_(sdkGrpc, 'sdk-grpc-full'))).chainId).to.equal('hub-other-1');
  });

  it('objectx: the chain identifier, and whether checkpoint 1 is still held', async () => {
    const id = createHash('sha256').update('ox-devnet-1').digest('hex').slice(0, 8);
    expect(await describe_(objectx, 'objectx-archive')).to.deep.equal({ chainId: id, role: 'archive', earliest: 1 });
    expect(await describe_(objectx, 'objectx-full')).to.deep.equal({ chainId: id, role: 'full' });
    const other = await underOtherChain('objectx-full', () => describe_(objectx, 'objectx-full'));
    expect(other.chainId).to.be.a('string').and.not.equal(id);
  });

  it('rejects when the node answers nothing', async () => {
    for (const [plugin, name] of [
      [evm, 'evm-full'],
      [sdkRpc, 'sdk-rpc-full'],
      [sdkRest, 'sdk-rest-full'],
      [sdkGrpc, 'sdk-grpc-full'],
      [objectx, 'objectx-full'],
    ] as const) {
      await devnet.node(name).setFaults({ down: true });
      try {
        const err = await describe_(plugin, name).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, name).to.be.instanceOf(Error);
      } finally {
        await devnet.node(name).clearFaults();
      }
    }
  });
});
