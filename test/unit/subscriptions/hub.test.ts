// The subscription hub (src/subscriptions/hub.ts) on real devnet EVM nodes over
// WebSocket: identical subscriptions share one node subscription, each client keeps
// its own id; a subscription moves to another node when its node's socket dies (which
// counts against that node's breaker) or its node leaves rotation (which does not);
// with no node left its clients are let go; the last client leaving ends the node's
// subscription; a reload hands everything to the successor.

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import { startDevnet, type Devnet } from '../../../src/devnet/index.js';
import { isGatewayError } from '../../../src/errors.js';
import type { ForwardObserver } from '../../../src/exec/exchanges/exchange.js';
import type { UpstreamOutcome } from '../../../src/exec/outcome.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import type { JsonRpcCall, JsonRpcCodec, SubscriptionCodec } from '../../../src/plugin/contract.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { SubscriptionHub, type Subscriber, type SubscribeResult } from '../../../src/subscriptions/hub.js';
import { chainConfig } from '../../support/chain.js';
import { pause, until } from '../../support/until.js';

const codec = evm.create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS }).jsonrpc as JsonRpcCodec<unknown>;
const ids = codec.subscriptions as SubscriptionCodec;

function subscribeCall(params: unknown[]): JsonRpcCall {
  return codec.parse(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params })).items[0] as JsonRpcCall;
}

class Client implements Subscriber {
  readonly delivered: string[] = [];
  readonly lostWith: Array<[number, string]> = [];
  deliver(text: string): void {
    this.delivered.push(text);
  }
  lost(code: number, reason: string): void {
    this.lostWith.push([code, reason]);
  }
  /** Subscription ids of the notifications delivered, in order. */
  subscriptionIds(): string[] {
    return this.delivered.map((t) => JSON.stringify((JSON.parse(t) as { params: { subscription: string } }).params.subscription));
  }
}

function idOf(r: SubscribeResult): string {
  if (isGatewayError(r) || !('id' in r)) throw new Error(`expected a subscription, got ${JSON.stringify(r)}`);
  return r.id;
}

describe('subscription hub (src/subscriptions/hub.ts)', () => {
  let devnet: Devnet;
  let pool: NodePool;
  let hub: SubscriptionHub;
  const moves: string[] = [];
  const upstream: Array<[string, UpstreamOutcome]> = [];
  const observer: ForwardObserver = {
    upstream: (node, outcome) => upstream.push([node.name, outcome]),
    retry: () => undefined,
  };

  beforeEach(async () => {
    moves.length = 0;
    upstream.length = 0;
    devnet = await startDevnet(
      [
        { network: 'h', family: 'evm', name: 'a', role: 'full' },
        { network: 'h', family: 'evm', name: 'b', role: 'full' },
      ],
      { blockTimeMs: 0, noControl: true },
    );
    pool = new NodePool(
      await chainConfig([
        { name: 'a', url: devnet.node('a').url, role: 'full' },
        { name: 'b', url: devnet.node('b').url, role: 'full' },
      ]),
    );
    hub = new SubscriptionHub(pool, codec, ids, {
      timeoutMs: 2_000,
      maxMessageBytes: 1 << 20,
      observer,
      events: { moved: (r) => moves.push(r) },
    });
  });

  afterEach(async () => {
    hub.close(1001, 'test over');
    await pool.close();
    await devnet.close();
  });

  /** eth_subscribe messages each devnet node received over WebSocket. */
  const subscribes = (): Record<string, number> =>
    Object.fromEntries(
      ['a', 'b'].map((n) => [n, devnet.node(n).received.filter((r) => r.method === 'WS' && r.body.includes('eth_subscribe')).length]),
    );
  const carrier = (): 'a' | 'b' => ((subscribes().a ?? 0) > 0 ? 'a' : 'b');
  const count = (): number => Object.values(subscribes()).reduce((a, b) => a + b, 0);
  const poolNode = (name: string): PoolNode => pool.nodes.find((n) => n.name === name) as PoolNode;
  const advance = (n = 1): void => devnet.chains.get('h')?.advance(n);

  it('shares one node subscription among identical client subscriptions, each client under its own id', async () => {
    const [one, two, logs] = [new Client(), new Client(), new Client()];
    const id1 = idOf(await hub.subscribe(one, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    const id2 = idOf(await hub.subscribe(two, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    expect(id1).to.match(/^"0x[0-9a-f]{32}"$/);
    expect(id2).to.not.equal(id1);
    expect([hub.subscriptions, hub.nodeSubscriptions]).to.deep.equal([2, 1]);
    expect(count()).to.equal(1);
    // Other params are another subscription.
    idOf(await hub.subscribe(logs, subscribeCall(['logs', {}]), 'eth_unsubscribe'));
    expect(hub.nodeSubscriptions).to.equal(2);

    advance();
    await until(() => one.delivered.length === 1 && two.delivered.length === 1, { what: 'both clients get the new head' });
    expect(one.subscriptionIds()).to.deep.equal([id1]);
    expect(two.subscriptionIds()).to.deep.equal([id2]);
    expect(JSON.parse(one.delivered[0] as string)).to.deep.include({ method: 'eth_subscription' });
    expect(upstream.map(([, o]) => o)).to.deep.equal(['ok', 'ok']);
  });

  it('speaks a 1.0 codec’s dialect: its subscribe calls carry no "jsonrpc", its notifications come as 1.0 ones', async () => {
    hub.close(1001, 'replaced');
    hub = new SubscriptionHub(pool, { ...codec, dialect: '1.0' }, ids, { timeoutMs: 2_000, maxMessageBytes: 1 << 20, observer });
    const client = new Client();
    const id = idOf(await hub.subscribe(client, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    const sent = ['a', 'b'].flatMap((n) => devnet.node(n).received.filter((r) => r.method === 'WS' && r.body.includes('eth_subscribe')));
    expect(sent.map((r) => JSON.parse(r.body) as Record<string, unknown>)).to.deep.equal([
      { method: 'eth_subscribe', params: ['newHeads'], id: 1 },
    ]);
    advance();
    await until(() => client.delivered.length === 1, { what: 'the client gets the new head' });
    const n = JSON.parse(client.delivered[0] as string) as Record<string, unknown>;
    expect(Object.keys(n)).to.deep.equal(['method', 'params', 'id']);
    expect(n).to.deep.include({ method: 'eth_subscription', id: null });
    expect(client.subscriptionIds()).to.deep.equal([id]);
  });

  it('makes identical subscriptions asked for at once on one node subscription', async () => {
    const results = await Promise.all(
      [new Client(), new Client(), new Client()].map((c) => hub.subscribe(c, subscribeCall(['newHeads']), 'eth_unsubscribe')),
    );
    expect(new Set(results.map(idOf)).size).to.equal(3);
    expect(count()).to.equal(1);
  });

  it('moves a subscription to another node when its node’s socket dies, keeping the client’s id, and blames the node', async () => {
    const client = new Client();
    const id = idOf(await hub.subscribe(client, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    const from = carrier();
    const to = from === 'a' ? 'b' : 'a';
    await devnet.node(from).setFaults({ down: true });
    await until(() => subscribes()[to] === 1 && hub.nodeSubscriptions === 1, { what: 'the subscription is made again on the other node' });
    expect(moves).to.deep.equal(['moved']);
    expect(poolNode(from).breakerFailures).to.equal(1);
    expect(poolNode(to).breakerFailures).to.equal(0);
    advance();
    await until(() => client.delivered.length === 1, { what: 'the moved subscription delivers' });
    expect(client.subscriptionIds()).to.deep.equal([id]);
    expect(client.lostWith).to.deep.equal([]);
  });

  it('moves subscriptions off a node that left rotation without blaming it', async () => {
    const client = new Client();
    const id = idOf(await hub.subscribe(client, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    const from = carrier();
    poolNode(from).inRotation = false;
    hub.check();
    await until(() => moves.length === 1, { what: 'the subscription moved' });
    expect(moves).to.deep.equal(['moved']);
    expect(poolNode(from).breakerFailures).to.equal(0);
    advance();
    await until(() => client.delivered.length === 1, { what: 'it delivers from its new node' });
    expect(client.subscriptionIds()).to.deep.equal([id]);
  });

  it('lets the clients go with 1013 when no node is left to carry their subscription', async () => {
    const [one, two] = [new Client(), new Client()];
    await hub.subscribe(one, subscribeCall(['newHeads']), 'eth_unsubscribe');
    await hub.subscribe(two, subscribeCall(['newHeads']), 'eth_unsubscribe');
    const other = carrier() === 'a' ? 'b' : 'a';
    await devnet.node(other).setFaults({ down: true });
    await devnet.node(carrier()).setFaults({ down: true });
    await until(() => one.lostWith.length === 1 && two.lostWith.length === 1, { what: 'the clients are let go' });
    expect(one.lostWith[0]?.[0]).to.equal(1013);
    expect(moves).to.deep.equal(['dropped']);
    expect([hub.subscriptions, hub.nodeSubscriptions]).to.deep.equal([0, 0]);
  });

  it('ends the node’s subscription when its last client leaves, and delivers nothing more', async () => {
    const [one, two] = [new Client(), new Client()];
    const id1 = idOf(await hub.subscribe(one, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    const id2 = idOf(await hub.subscribe(two, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    expect(hub.unsubscribe(id1)).to.equal(true);
    expect(hub.unsubscribe(id1)).to.equal(false);
    expect(hub.nodeSubscriptions).to.equal(1);
    expect(hub.unsubscribe(id2)).to.equal(true);
    expect([hub.subscriptions, hub.nodeSubscriptions]).to.deep.equal([0, 0]);
    advance();
    // A later subscription proves the node has pushed the block by the time it is made.
    const three = new Client();
    idOf(await hub.subscribe(three, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    expect([one.delivered, two.delivered]).to.deep.equal([[], []]);
    // The gateway closed that socket: nothing counts against the node.
    expect(pool.nodes.map((n) => n.breakerFailures)).to.deep.equal([0, 0]);
  });

  it('gives a subscription the chain refused back as the chain’s error, keeping nothing of it', async () => {
    const r = await hub.subscribe(new Client(), subscribeCall(['bogus']), 'eth_unsubscribe');
    expect(r).to.deep.equal({ refusal: '{"code":-32602,"message":"no \\"bogus\\" subscription in eth namespace"}' });
    expect([hub.subscriptions, hub.nodeSubscriptions]).to.deep.equal([0, 0]);
    expect(upstream.map(([, o]) => o)).to.deep.equal(['chain_error']);
  });

  it('answers with the error table when no node can take a subscription', async () => {
    await devnet.node('a').setFaults({ down: true });
    await devnet.node('b').setFaults({ down: true });
    const r = await hub.subscribe(new Client(), subscribeCall(['newHeads']), 'eth_unsubscribe');
    if (!isGatewayError(r)) throw new Error(`expected a gateway error, got ${JSON.stringify(r)}`);
    expect(r.code).to.equal('UPSTREAM_FAILED');
    expect(upstream.map(([, o]) => o)).to.deep.equal(['failure', 'failure']);
    // One failed connection is one failure, however many ways it is heard of: the
    // pause gives a second report (the socket's close after its error) time to come.
    await pause(50);
    expect(pool.nodes.map((n) => n.breakerFailures)).to.deep.equal([1, 1]);
  });

  it('hands every subscription to its successor on a reload', async () => {
    const client = new Client();
    const id = idOf(await hub.subscribe(client, subscribeCall(['newHeads']), 'eth_unsubscribe'));
    const next = new SubscriptionHub(pool, codec, ids, { timeoutMs: 2_000, maxMessageBytes: 1 << 20, observer });
    hub.handOver(next);
    hub = next;
    expect([next.subscriptions, next.nodeSubscriptions]).to.deep.equal([1, 1]);
    advance();
    await until(() => client.delivered.length === 1, { what: 'the successor delivers' });
    expect(client.subscriptionIds()).to.deep.equal([id]);
    expect(next.unsubscribe(id)).to.equal(true);
  });
});
