// WebSocket through a real gateway with real `ws` clients and devnet nodes that
// speak WebSocket: authenticated upgrades, calls routed like HTTP, subscriptions
// relayed, shared and moved when their node dies or lags, limits, revocation,
// pings, metrics and shutdown. Probes run by hand; time is a clock the test moves.

import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import WebSocket from 'ws';
import type { ChainRuntime } from '../../src/chain/runtime.js';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { rawRequest } from '../support/raw-http.js';
import { RpcSocket, refusal, wsUrl } from '../support/ws-client.js';
import { until } from '../support/until.js';

const L1: ChainSpec = {
  name: 'l1',
  plugin: 'evm',
  path: '/l1',
  extra: '    health: { intervalMs: 60000, timeoutMs: 500, maxLag: 3, failAfter: 1 }',
  nodes: [
    { name: 'l1-full-1', role: 'full' },
    { name: 'l1-full-2', role: 'full' },
    { name: 'l1-archive-1', role: 'archive' },
  ],
};
const SOLO: ChainSpec = { name: 'solo', plugin: 'evm', path: '/solo', nodes: [{ name: 'solo-full-1', role: 'full' }] };
const OBJX: ChainSpec = { name: 'objectx', plugin: 'objectx', path: '/objectx', nodes: [{ name: 'objx-full-1', role: 'full' }] };
const REST: ChainSpec = { name: 'hub-rest', plugin: 'sdk-rest', path: '/hub/rest', nodes: [{ name: 'hub-rest-full-1', role: 'full' }] };

const TIERS = `
  free: { rate: 100, burst: 100, maxBatch: 10, archive: false, wsConnections: 2, wsSubscriptions: 2 }
  trickle: { rate: 1, burst: 2, wsConnections: 5 }
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 1000, archive: true, wsConnections: unlimited }
`;

function runtime(stack: Stack, name: string): ChainRuntime {
  const rt = stack.gateway.runtimes().find((c) => c.name === name);
  if (rt === undefined) throw new Error(`no chain ${name}`);
  return rt;
}

/** Which devnet nodes received an eth_subscribe over their WebSocket. */
function subscribedOn(stack: Stack, prefix = 'l1-'): string[] {
  return [...stack.devnet.nodes.values()]
    .filter((n) => n.name.startsWith(prefix) && n.received.some((r) => r.method === 'WS' && r.body.includes('_subscribe"')))
    .map((n) => n.name);
}

function clear(stack: Stack): void {
  for (const n of stack.devnet.nodes.values()) n.clearReceived();
}

async function metric(stack: Stack, re: RegExp): Promise<number> {
  return Number(re.exec((await get(stack.admin('/metrics'))).text)?.[1] ?? 0);
}

describe('WebSocket', function () {
  this.timeout(30_000);
  let stack: Stack;
  let clock = Date.now();
  let url: string;
  const open: RpcSocket[] = [];
  const connect = async (path: string, key: string, how: 'header' | 'query' = 'header'): Promise<RpcSocket> => {
    const s =
      how === 'header'
        ? await RpcSocket.open(`${url}${path}`, { headers: { apikey: key } })
        : await RpcSocket.open(`${url}${path}?apikey=${encodeURIComponent(key)}`);
    open.push(s);
    return s;
  };

  before(async () => {
    stack = await startStack({
      chains: [L1, SOLO, OBJX, REST],
      tiers: TIERS,
      now: () => clock,
      serverYaml: 'wsMaxMessageBytes: 4096, wsPingIntervalMs: 100',
    });
    url = wsUrl(stack.gateway.url);
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  afterEach(async () => {
    for (const s of open.splice(0)) if (s.ws.readyState === WebSocket.OPEN) await s.close();
    for (const n of stack.devnet.nodes.values()) await n.clearFaults();
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    clear(stack);
  });
  after(async () => {
    await stack?.close();
  });

  describe('upgrade', () => {
    it('accepts the key in the apikey header or query parameter', async () => {
      for (const how of ['header', 'query'] as const) {
        const s = await connect('/l1', stack.key, how);
        const a = await s.call('eth_blockNumber');
        expect(a.result).to.match(/^0x[0-9a-f]+$/);
      }
    });

    it('refuses a missing, unknown or malformed key with 401 before the upgrade, in the JSON-RPC error shape', async () => {
      const variants: Array<Record<string, string>> = [{}, { apikey: 'nrk_00000000000000000000000000000000' }, { apikey: 'bad key!' }];
      for (const headers of variants) {
        const r = await refusal(`${url}/l1`, headers);
        expect(r.status).to.equal(401);
        expect(JSON.parse(r.body)).to.deep.include({ jsonrpc: '2.0', id: null });
        expect(JSON.parse(r.body).error.code).to.equal(-32016);
      }
      const both = await refusal(`${url}/l1?apikey=${stack.key}`, { apikey: (await stack.createKey('enterprise')).value });
      expect(both.status).to.equal(401);
    });

    it('refuses a key not permitted for the chain (403), an endpoint without WebSocket (404) and unknown paths (404)', async () => {
      const narrow = await stack.createKey('enterprise', { chains: ['objectx'] });
      expect((await refusal(`${url}/l1`, { apikey: narrow.value })).status).to.equal(403);
      const rest = await refusal(`${url}/hub/rest`, { apikey: stack.key });
      expect(rest.status).to.equal(404);
      expect(JSON.parse(rest.body).error.message).to.match(/WebSocket/);
      expect((await refusal(`${url}/nowhere`, { apikey: stack.key })).status).to.equal(404);
      expect((await refusal(`${url}/l1/sub`, { apikey: stack.key })).status).to.equal(404);
    });

    it('caps connections per key at the tier limit (429), and frees the slot when one closes', async () => {
      const { value } = await stack.createKey('free');
      const a = await connect('/l1', value);
      await connect('/solo', value);
      const r = await refusal(`${url}/l1`, { apikey: value });
      expect(r.status).to.equal(429);
      expect(JSON.parse(r.body).error).to.deep.include({ code: -32005 });
      expect(JSON.parse(r.body).error.message).to.match(/limit of 2/);
      expect(await metric(stack, /noderouter_rejections_total\{chain="l1",tier="free",reason="connections"\} (\d+)/)).to.equal(1);
      await a.close();
      await until(async () => (await metric(stack, /noderouter_ws_connections\{chain="l1"\} (\d+)/)) === 0);
      const again = await connect('/l1', value);
      expect((await again.call('eth_chainId')).result).to.equal('0x1');
    });
  });

  it('gives the connection slot back when a malformed handshake is refused', async () => {
    const { value } = await stack.createKey('free');
    const port = new URL(stack.gateway.url).port;
    for (let i = 0; i < 3; i++) {
      // No Sec-WebSocket-Key: ws refuses the handshake after the key was accepted.
      const r = await rawRequest(
        stack.gateway.url,
        `GET /l1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\napikey: ${value}\r\n\r\n`,
      );
      expect(r.status).to.equal(400);
    }
    await until(async () => {
      const s = await RpcSocket.open(`${url}/l1`, { headers: { apikey: value } }).catch(() => undefined);
      if (s !== undefined) open.push(s);
      return s !== undefined;
    });
  });

  describe('calls', () => {
    it('routes calls like HTTP: ids byte for byte, batches, archive routing, and no node sees the key', async () => {
      const s = await connect('/l1', stack.key);
      const big = await s.send('{"jsonrpc":"2.0","id":18446744073709551615,"method":"eth_chainId"}', '18446744073709551615');
      expect(big.raw).to.equal('{"jsonrpc":"2.0","id":18446744073709551615,"result":"0x1"}');
      const batch = await s.send(
        '[{"jsonrpc":"2.0","id":"a","method":"eth_blockNumber"},{"jsonrpc":"2.0","id":"b","method":"eth_getBalance","params":["0x00000000000000000000000000000000000000aa","0x1"]}]',
        '"a"',
      );
      expect(batch.map((x) => x.id)).to.deep.equal(['a', 'b']);
      expect(batch[1]?.result).to.match(/^0x/);
      // The old-block read went to the archive node over HTTP, like any call.
      const archive = stack.devnet.node('l1-archive-1').received.filter((r) => r.method === 'POST' && r.body.includes('getBalance'));
      expect(archive).to.have.length(1);
      for (const n of stack.devnet.nodes.values()) {
        for (const r of n.received) {
          expect(r.headers.apikey, n.name).to.equal(undefined);
          expect(r.path + r.body).to.not.include(stack.key);
        }
      }
    });

    it('answers bad messages with JSON-RPC errors and keeps the connection', async () => {
      const s = await connect('/l1', stack.key);
      expect((await s.send('not json', 'null')).error?.code).to.equal(-32700);
      expect((await s.send('{"jsonrpc":"2.0","id":7}', '7')).error?.code).to.equal(-32600);
      expect((await s.call('eth_blockNumber')).result).to.match(/^0x/);
    });

    it('rate-limits per message with the tier limit, answering -32005 without closing', async () => {
      const { value } = await stack.createKey('trickle');
      const s = await connect('/l1', value);
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await s.call('eth_blockNumber'));
      expect(answers.slice(0, 2).every((a) => typeof a.result === 'string')).to.equal(true);
      expect(answers[2]?.error?.code).to.equal(-32005);
      expect(s.ws.readyState).to.equal(WebSocket.OPEN);
    });

    it('closes with 1009 on a message over server.wsMaxMessageBytes', async () => {
      const s = await connect('/l1', stack.key);
      s.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ data: `0x${'00'.repeat(4096)}` }, 'latest'] }));
      expect((await s.closed).code).to.equal(1009);
    });

    it('serves the object chain over WebSocket too, with its event subscription', async () => {
      const s = await connect('/objectx', stack.key);
      const bal = await s.call('suix_getBalance', [`0x${'11'.repeat(32)}`, '0x2::sui::SUI']);
      expect(bal.result).to.have.keys('coinType', 'coinObjectCount', 'totalBalance', 'lockedBalance');
      const sub = await s.call('suix_subscribeEvent', [{ All: [] }]);
      expect(sub.result).to.match(/^0x[0-9a-f]{32}$/);
      stack.devnet.chains.get('objectx')?.advance();
      const { note } = await s.note(sub.result);
      expect(note.method).to.equal('suix_subscribeEvent');
      expect((note.params.result as { type: string }).type).to.equal('0x2::devnet::Checkpoint');
    });
  });

  describe('subscriptions', () => {
    it('relays newHeads from a node under the gateway’s own subscription id', async () => {
      const s = await connect('/l1', stack.key);
      const sub = await s.call('eth_subscribe', ['newHeads']);
      expect(sub.result).to.match(/^0x[0-9a-f]{32}$/);
      const chain = stack.devnet.chains.get('l1');
      chain?.advance();
      const { note } = await s.note(sub.result);
      expect(note.method).to.equal('eth_subscription');
      expect((note.params.result as { number: string }).number).to.equal(`0x${(chain?.height() ?? 0).toString(16)}`);
      expect(await metric(stack, /noderouter_ws_notifications_total\{chain="l1"\} (\d+)/)).to.be.greaterThan(0);
      expect((await s.call('eth_unsubscribe', [sub.result])).result).to.equal(true);
      expect((await s.call('eth_unsubscribe', [sub.result])).error?.message).to.equal('subscription not found');
    });

    it('relays the node’s refusal of bad subscription params to the caller', async () => {
      const s = await connect('/l1', stack.key);
      const a = await s.call('eth_subscribe', ['bogus']);
      expect(a.error?.message).to.match(/no "bogus" subscription/);
    });

    it('shares one node subscription between identical client subscriptions', async () => {
      const a = await connect('/l1', stack.key);
      const b = await connect('/l1', stack.key);
      const sa = (await a.call('eth_subscribe', ['newHeads'])).result;
      const sb = (await b.call('eth_subscribe', ['newHeads'])).result;
      expect(sa).to.not.equal(sb);
      expect(await metric(stack, /noderouter_ws_subscriptions\{chain="l1"\} (\d+)/)).to.equal(2);
      expect(await metric(stack, /noderouter_ws_node_subscriptions\{chain="l1"\} (\d+)/)).to.equal(1);
      stack.devnet.chains.get('l1')?.advance();
      expect((await a.note(sa)).note.params.subscription).to.equal(sa);
      expect((await b.note(sb)).note.params.subscription).to.equal(sb);
    });

    it('moves a subscription to another node when its node dies, keeping the id', async () => {
      const s = await connect('/l1', stack.key);
      const id = (await s.call('eth_subscribe', ['newHeads'])).result;
      const chain = stack.devnet.chains.get('l1');
      chain?.advance();
      const first = await s.note(id);
      const [carrier] = subscribedOn(stack);
      expect(carrier).to.be.a('string');
      const moved0 = await metric(stack, /noderouter_subscription_moves_total\{chain="l1",result="moved"\} (\d+)/);
      await stack.devnet.node(carrier as string).setFaults({ down: true });
      await until(() => subscribedOn(stack).length === 2);
      await until(
        async () => (await metric(stack, /noderouter_subscription_moves_total\{chain="l1",result="moved"\} (\d+)/)) === moved0 + 1,
      );
      chain?.advance();
      const next = await s.note(id, first.index + 1);
      expect(next.note.params.subscription).to.equal(id);
      expect((next.note.params.result as { number: string }).number).to.equal(`0x${(chain?.height() ?? 0).toString(16)}`);
    });

    it('moves a subscription off a node that lags behind the head', async () => {
      const s = await connect('/l1', stack.key);
      const id = (await s.call('eth_subscribe', ['newHeads'])).result;
      const [carrier] = subscribedOn(stack);
      await stack.devnet.node(carrier as string).setFaults({ stalled: true });
      const chain = stack.devnet.chains.get('l1');
      chain?.advance(5);
      await runtime(stack, 'l1').prober.probeAll();
      await until(() => subscribedOn(stack).length === 2);
      const from = s.notes.length;
      chain?.advance();
      const { note } = await s.note(id, from);
      expect((note.params.result as { number: string }).number).to.equal(`0x${(chain?.height() ?? 0).toString(16)}`);
    });

    it('keeps subscriptions across a reload, moving those whose node left the config', async () => {
      const s = await connect('/l1', stack.key);
      const id = (await s.call('eth_subscribe', ['newHeads'])).result;
      const [carrier] = subscribedOn(stack);
      const original = await readFile(stack.configFile, 'utf8');
      try {
        // The same nodes with other settings: the runtime is new, its nodes and sockets are kept.
        await writeFile(stack.configFile, original.replace('maxLag: 3,', 'maxLag: 4,'));
        expect(await stack.gateway.reload()).to.equal(true);
        let from = s.notes.length;
        stack.devnet.chains.get('l1')?.advance();
        expect((await s.note(id, from)).note.params.subscription).to.equal(id);
        expect(subscribedOn(stack)).to.deep.equal([carrier]);
        // The carrier leaves the config: its subscriptions move to a node that stayed.
        const without = original
          .split('\n')
          .filter((l) => !l.includes(`name: ${carrier as string},`))
          .join('\n');
        await writeFile(stack.configFile, without);
        expect(await stack.gateway.reload()).to.equal(true);
        await until(() => subscribedOn(stack).length === 2);
        from = s.notes.length;
        stack.devnet.chains.get('l1')?.advance();
        expect((await s.note(id, from)).note.params.subscription).to.equal(id);
      } finally {
        await writeFile(stack.configFile, original);
        await stack.gateway.reload();
      }
    });

    it('closes with 1013 when no node is left to carry a subscription', async () => {
      const s = await connect('/solo', stack.key);
      await s.call('eth_subscribe', ['newHeads']);
      await stack.devnet.node('solo-full-1').setFaults({ down: true });
      const closed = await s.closed;
      expect(closed.code).to.equal(1013);
      expect(await metric(stack, /noderouter_subscription_moves_total\{chain="solo",result="dropped"\} (\d+)/)).to.equal(1);
    });

    it('caps subscriptions per connection at the tier limit', async () => {
      const { value } = await stack.createKey('free');
      const s = await connect('/l1', value);
      expect((await s.call('eth_subscribe', ['newHeads'])).result).to.be.a('string');
      expect((await s.call('eth_subscribe', ['logs', {}])).result).to.be.a('string');
      const third = await s.call('eth_subscribe', ['newPendingTransactions']);
      expect(third.error?.code).to.equal(-32005);
      expect(third.error?.message).to.match(/limit of 2/);
    });
  });

  describe('keys and liveness', () => {
    it('closes a revoked key’s sockets with 1008', async () => {
      const { id, value } = await stack.createKey('enterprise');
      const s = await connect('/l1', value);
      await s.call('eth_subscribe', ['newHeads']);
      await stack.gateway.keys.revoke(id);
      const closed = await s.closed;
      expect(closed.code).to.equal(1008);
      expect(closed.reason).to.match(/revoked/);
    });

    it('closes a rotated key’s old socket once its grace ends', async () => {
      const { id, value } = await stack.createKey('enterprise');
      const s = await connect('/l1', value);
      await stack.gateway.keys.rotate(id, 60);
      expect((await s.call('eth_blockNumber')).result).to.be.a('string');
      // The store dates the grace from the wall clock; the gateway reads the test's clock.
      const saved = clock;
      clock = Date.now() + 61_000;
      try {
        s.ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}');
        expect((await s.closed).code).to.equal(1008);
      } finally {
        clock = saved;
      }
    });

    it('drops a client that stops answering pings, and keeps one that answers', async () => {
      const mute = await connect('/l1', stack.key);
      // autoPong off: this client never answers the gateway's pings.
      const deaf = await RpcSocket.open(`${url}/l1`, { headers: { apikey: stack.key }, autoPong: false });
      open.push(deaf);
      let pings = 0;
      mute.ws.on('ping', () => pings++);
      expect((await deaf.closed).code).to.equal(1006);
      await until(() => pings >= 3);
      expect(mute.ws.readyState).to.equal(WebSocket.OPEN);
    });

    it('counts calls over WebSocket in the key’s usage, once each', async () => {
      const { id, value } = await stack.createKey('enterprise');
      const s = await connect('/l1', value);
      await s.call('eth_blockNumber');
      await s.send('[{"jsonrpc":"2.0","id":"x","method":"eth_chainId"},{"jsonrpc":"2.0","id":"y","method":"eth_chainId"}]', '"x"');
      const rows = await stack.gateway.services.bundle.limiter.usage(id);
      expect(rows.map((r) => [r.chain, r.calls])).to.deep.equal([['l1', 3]]);
    });

    it('counts both transports in the metrics', async () => {
      const s = await connect('/l1', stack.key);
      await s.call('eth_chainId');
      await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { apikey: stack.key });
      const text = (await get(stack.admin('/metrics'))).text;
      expect(text).to.match(/noderouter_requests_total\{chain="l1",method="eth_chainId",outcome="ok",transport="ws"\} \d+/);
      expect(text).to.match(/noderouter_requests_total\{chain="l1",method="eth_chainId",outcome="ok",transport="http"\} \d+/);
      expect(text).to.match(/noderouter_ws_connections\{chain="l1"\} 1/);
    });
  });
});

describe('WebSocket at shutdown', function () {
  this.timeout(30_000);

  it('closes every socket with 1001 (going away) on shutdown', async () => {
    const stack = await startStack({ chains: [SOLO], tiers: TIERS });
    const url = wsUrl(stack.gateway.url);
    const s = await RpcSocket.open(`${url}/solo`, { headers: { apikey: stack.key } });
    await s.call('eth_subscribe', ['newHeads']);
    const closing = stack.close();
    expect((await s.closed).code).to.equal(1001);
    await closing;
  });
});
