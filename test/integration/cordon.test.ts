// Cordon and drain at run time, as an operator does it: the admin API (behind the admin
// token) and `noderouter nodes …` take a node out of rotation for new calls (cordon), or
// for every call with its WebSocket subscriptions moved off (drain), while calls in
// flight finish. The hold shows in /health/chains and /metrics, survives reloads (kept
// nodes keep it, rebuilt ones get it by name) and restarts, and is shared by every
// instance on one record with the Redis hot state.

import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { loadConfig } from '../../src/config/load.js';
import { Gateway } from '../../src/app/gateway.js';
import { silentLogger } from '../../src/ops/log.js';
import { runCli } from '../support/cli.js';
import { get, redisHot, rpc, startStack, type Stack } from '../support/harness.js';
import { deleteUnderPrefix, testPrefix } from '../support/redis.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';
import { until } from '../support/until.js';

const TOKEN = 'admin-token-for-cordon-tests';
const auth = { authorization: `Bearer ${TOKEN}` };

interface NodeState {
  name: string;
  state: string;
  since: string | null;
  holdReason: string | null;
  inRotation: boolean;
  inFlight: number;
  subscriptions: number;
}

async function post(url: string, body: unknown = {}, headers: Record<string, string> = auth): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as unknown };
}

async function nodeState(adminUrl: string, chain: string, node: string): Promise<NodeState> {
  const { chains } = (await get(`${adminUrl}/health/chains`)).json as { chains: Array<{ chain: string; nodes: NodeState[] }> };
  return chains.find((c) => c.chain === chain)?.nodes.find((n) => n.name === node) as NodeState;
}

const L1 = {
  name: 'l1',
  plugin: 'evm',
  path: '/l1',
  nodes: [
    { name: 'c-full-1', role: 'full' as const },
    { name: 'c-full-2', role: 'full' as const },
    { name: 'c-archive-1', role: 'archive' as const },
  ],
};

describe('cordon and drain', function () {
  this.timeout(30_000);
  let stack: Stack;
  const admin = (path: string): string => stack.admin(path);
  const call = (id: string, method = 'eth_blockNumber', params: unknown[] = []) =>
    rpc(stack.url('/l1'), { jsonrpc: '2.0', id, method, params }, { apikey: stack.key });
  const calls = (node: string, marker: string): number => stack.devnet.node(node).received.filter((r) => r.body.includes(marker)).length;

  before(async () => {
    stack = await startStack({ chains: [L1], adminToken: TOKEN });
  });
  after(() => stack.close());
  afterEach(async () => {
    for (const n of L1.nodes) await post(admin(`/admin/nodes/l1/${n.name}/uncordon`));
  });

  it('needs the admin token, a known node and a short printable reason', async () => {
    expect((await post(admin('/admin/nodes/l1/c-full-1/cordon'), {}, {})).status).to.equal(401);
    expect((await get(admin('/admin/nodes'))).status).to.equal(401);
    const unknown = await post(admin('/admin/nodes/l1/c-full-9/cordon'));
    expect(unknown.status).to.equal(404);
    expect((unknown.json as { error: { code: string } }).error.code).to.equal('NODE_NOT_FOUND');
    expect((await post(admin('/admin/nodes/l1/c-full-1/reboot'))).status).to.equal(404);
    const bad = await post(admin('/admin/nodes/l1/c-full-1/cordon'), { reason: 'a\nb' });
    expect(bad.status).to.equal(400);
    expect((await post(admin('/admin/nodes/l1/c-full-1/cordon'), { reason: 'x'.repeat(201) })).status).to.equal(400);
    expect((await nodeState(stack.gateway.adminUrl, 'l1', 'c-full-1')).state).to.equal('active');
  });

  it('cordon takes a node out of rotation for new calls, shown in /health/chains and /metrics; uncordon puts it back', async () => {
    const res = await post(admin('/admin/nodes/l1/c-full-1/cordon'), { reason: 'disk swap' });
    expect(res.status).to.equal(200);
    expect((res.json as { node: Record<string, unknown> }).node).to.include({
      chain: 'l1',
      node: 'c-full-1',
      state: 'cordoned',
      reason: 'disk swap',
    });
    for (let i = 0; i < 6; i++) expect((await call(`cord-a-${i}`)).status).to.equal(200);
    expect(calls('c-full-1', 'cord-a-')).to.equal(0);
    expect(calls('c-full-2', 'cord-a-')).to.equal(6);
    const state = await nodeState(stack.gateway.adminUrl, 'l1', 'c-full-1');
    expect(state).to.include({ state: 'cordoned', holdReason: 'disk swap', inRotation: true });
    expect(Date.parse(state.since as string)).to.be.greaterThan(0);
    const metrics = (await get(admin('/metrics'))).text;
    expect(metrics).to.match(/noderouter_node_cordon_state\{chain="l1",node="c-full-1"\} 1/);
    expect(metrics).to.match(/noderouter_node_cordon_state\{chain="l1",node="c-full-2"\} 0/);
    expect(metrics).to.match(/noderouter_node_up\{chain="l1",node="c-full-1"\} 1/);
    // Holds are the operator's, not the instance's health: readiness stays.
    expect((await get(admin('/health/ready'))).status).to.equal(200);

    await post(admin('/admin/nodes/l1/c-full-1/uncordon'));
    for (let i = 0; i < 6; i++) await call(`cord-b-${i}`);
    expect(calls('c-full-1', 'cord-b-')).to.equal(3);
    expect((await nodeState(stack.gateway.adminUrl, 'l1', 'c-full-1')).state).to.equal('active');
  });

  it('a cordoned node keeps serving the filters it holds; a drained one lets them go', async () => {
    // Two filters: round-robin makes one of them on each full node.
    const made = [await call('cord-f-0', 'eth_newBlockFilter'), await call('cord-f-1', 'eth_newBlockFilter')];
    const onFull1 = calls('c-full-1', 'cord-f-0') === 1 ? 0 : 1;
    expect(calls('c-full-1', `cord-f-${onFull1}`)).to.equal(1);
    const id = (made[onFull1]?.json as { result: string }).result;
    await post(admin('/admin/nodes/l1/c-full-1/cordon'));
    const poll = await call('cord-poll-1', 'eth_getFilterChanges', [id]);
    expect((poll.json as { result?: unknown }).result).to.deep.equal([]);
    expect(calls('c-full-1', 'cord-poll-1')).to.equal(1);
    await post(admin('/admin/nodes/l1/c-full-1/drain'));
    const gone = await call('cord-poll-2', 'eth_getFilterChanges', [id]);
    expect((gone.json as { error?: { message: string } }).error?.message).to.match(/filter not found/);
    expect(calls('c-full-1', 'cord-poll-2')).to.equal(0);
  });

  it('drain lets calls in flight finish and moves WebSocket subscriptions to another node, keeping the client’s id', async () => {
    const socket = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: { apikey: stack.key } });
    try {
      for (const n of L1.nodes) stack.devnet.node(n.name).clearReceived();
      const sub = (await socket.call('eth_subscribe', ['newHeads'])).result;
      const carrier = L1.nodes.map((n) => n.name).find((n) => stack.devnet.node(n).received.some((r) => r.method === 'WS')) as string;
      expect(carrier).to.be.a('string');
      expect((await nodeState(stack.gateway.adminUrl, 'l1', carrier)).subscriptions).to.equal(1);
      const other = carrier === 'c-full-1' ? 'c-full-2' : 'c-full-1';
      // A call waits at the carrier while it is drained.
      const held = carrier === 'c-archive-1' ? undefined : carrier;
      let inflight: ReturnType<typeof call> | undefined;
      if (held !== undefined) {
        await stack.devnet.node(held).setFaults({ hold: true });
        await post(admin(`/admin/nodes/l1/${other}/cordon`));
        inflight = call('cord-inflight');
        await until(() => calls(held, 'cord-inflight') === 1);
        await post(admin(`/admin/nodes/l1/${other}/uncordon`));
      }
      const drained = await post(admin(`/admin/nodes/l1/${carrier}/drain`), { reason: 'upgrade' });
      expect(drained.status).to.equal(200);
      if (held !== undefined && inflight !== undefined) {
        expect((await nodeState(stack.gateway.adminUrl, 'l1', held)).inFlight).to.be.at.least(1);
        await stack.devnet.node(held).clearFaults();
        expect((await inflight).status).to.equal(200);
        await until(async () => (await nodeState(stack.gateway.adminUrl, 'l1', held)).inFlight === 0);
      }
      await until(async () => (await nodeState(stack.gateway.adminUrl, 'l1', carrier)).subscriptions === 0);
      const movedTo = L1.nodes
        .map((n) => n.name)
        .filter((n) => n !== carrier && stack.devnet.node(n).received.some((r) => r.method === 'WS'));
      expect(movedTo).to.have.length(1);
      const from = socket.notes.length;
      stack.devnet.chains.get('l1')?.advance();
      const { note } = await socket.note(sub, from);
      expect(note.params.subscription).to.equal(sub);
      expect((await get(admin('/metrics'))).text).to.match(/noderouter_subscription_moves_total\{chain="l1",result="moved"\} [1-9]/);
      for (let i = 0; i < 4; i++) await call(`cord-d-${i}`);
      expect(calls(carrier, 'cord-d-')).to.equal(0);
    } finally {
      await socket.close();
    }
  });

  it('keeps holds through reloads: kept nodes keep theirs, rebuilt runtimes get theirs by name', async () => {
    await post(admin('/admin/nodes/l1/c-full-1/cordon'), { reason: 'kept' });
    const original = await readFile(stack.configFile, 'utf8');
    try {
      // The endpoint changes, its nodes do not: a new runtime on the same nodes.
      await writeFile(stack.configFile, original.replace('    cache: off', '    cache: off\n    maxAttempts: 2'));
      expect(await stack.gateway.reload()).to.equal(true);
      expect((await nodeState(stack.gateway.adminUrl, 'l1', 'c-full-1')).state).to.equal('cordoned');
      // The nodes change: new node objects, the hold found again by name.
      const rt = stack.gateway.runtimes()[0];
      await writeFile(stack.configFile, original.replace(/(name: c-full-2, [^}]*weight: )1/, '$12'));
      expect(await stack.gateway.reload()).to.equal(true);
      expect(stack.gateway.runtimes()[0]?.pool.nodes).to.not.equal(rt?.pool.nodes);
      expect(stack.gateway.runtimes()[0]?.pool.nodes.find((n) => n.name === 'c-full-1')?.hold).to.equal('cordoned');
      for (let i = 0; i < 4; i++) await call(`cord-r-${i}`);
      expect(calls('c-full-1', 'cord-r-')).to.equal(0);
      // A node the config no longer has keeps its hold, listed as unknown, and can be lifted.
      await writeFile(stack.configFile, original.replace(/\n\s+- \{ name: c-full-1,[^\n]*/, ''));
      expect(await stack.gateway.reload()).to.equal(true);
      const list = (await get(admin('/admin/nodes'), auth)).json as { nodes: Array<{ node: string; known: boolean; state: string }> };
      expect(list.nodes.find((n) => n.node === 'c-full-1')).to.include({ known: false, state: 'cordoned' });
      expect((await post(admin('/admin/nodes/l1/c-full-1/drain'))).status).to.equal(404);
      expect((await post(admin('/admin/nodes/l1/c-full-1/uncordon'))).status).to.equal(200);
      expect(((await get(admin('/admin/nodes'), auth)).json as { nodes: Array<{ node: string }> }).nodes.map((n) => n.node)).to.not.include(
        'c-full-1',
      );
    } finally {
      await writeFile(stack.configFile, original);
      await stack.gateway.reload();
    }
  });

  it('keeps holds through a restart (the record keeps them)', async () => {
    await post(admin('/admin/nodes/l1/c-full-2/drain'), { reason: 'restart' });
    const next = await Gateway.start(await loadConfig(stack.configFile), { logger: silentLogger });
    try {
      const state = await nodeState(next.adminUrl, 'l1', 'c-full-2');
      expect(state).to.include({ state: 'draining', holdReason: 'restart' });
    } finally {
      await next.close();
    }
  });

  it('is driven by `noderouter nodes …` through the admin API', async function () {
    // Eight CLI processes, each compiling the source through tsx: slow on a loaded machine.
    this.timeout(90_000);
    const env = { NODEROUTER_ADMIN_TOKEN: TOKEN };
    const base = ['--config', stack.configFile, '--admin', stack.gateway.adminUrl];
    const cordon = await runCli(['nodes', 'cordon', 'l1', 'c-full-2', '--reason', 'kernel update', ...base], env);
    expect(cordon.code, cordon.stderr).to.equal(0);
    expect(cordon.stdout).to.match(/^l1\s+c-full-2\s+full\s+cordoned\s+in\s+0\s+0\s+\S+\s+kernel update$/m);
    expect((await nodeState(stack.gateway.adminUrl, 'l1', 'c-full-2')).state).to.equal('cordoned');
    const drain = await runCli(['nodes', 'drain', 'l1', 'c-full-1', ...base], env);
    expect(drain.code, drain.stderr).to.equal(0);
    const list = await runCli(['nodes', 'list', ...base], env);
    expect(list.code).to.equal(0);
    expect(list.stdout).to.match(/^CHAIN\s+NODE\s+ROLE\s+STATE\s+ROTATION\s+IN-FLIGHT\s+SUBS\s+SINCE\s+REASON$/m);
    expect(list.stdout).to.match(/^l1\s+c-full-1\s+full\s+draining\s/m);
    expect(list.stdout).to.match(/^l1\s+c-archive-1\s+archive\s+active\s/m);
    const json = await runCli(['nodes', 'list', '--json', ...base], env);
    expect((JSON.parse(json.stdout) as Array<{ node: string; state: string }>).find((n) => n.node === 'c-full-2')?.state).to.equal(
      'cordoned',
    );
    const uncordon = await runCli(['nodes', 'uncordon', 'l1', 'c-full-2', ...base], env);
    expect(uncordon.code).to.equal(0);
    expect((await nodeState(stack.gateway.adminUrl, 'l1', 'c-full-2')).state).to.equal('active');
    const unknown = await runCli(['nodes', 'cordon', 'l1', 'nope', ...base], env);
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.contain('no node "nope" in chain endpoint "l1"');
    const noToken = await runCli(['nodes', 'list', ...base], { NODEROUTER_ADMIN_TOKEN: 'wrong-token-of-some-length' });
    expect(noToken.code).to.equal(2);
    expect(noToken.stderr).to.contain('Admin token required');
    const away = await runCli(['nodes', 'list', '--config', stack.configFile, '--admin', 'http://127.0.0.1:1'], env);
    expect(away.code).to.equal(1);
    expect(away.stderr).to.contain('cannot reach the admin API at http://127.0.0.1:1');
  });
});

describe('cordon and drain across instances (SQLite record, Redis hot state)', function () {
  this.timeout(30_000);
  const prefix = testPrefix();
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      chains: [L1],
      adminToken: TOKEN,
      hotYaml: redisHot(prefix, 'timeoutMs: 500'),
    });
  });
  after(async () => {
    await stack.close();
    await deleteUnderPrefix(prefix);
  });

  it('a hold set on one instance is applied by the others at once, and by instances started later', async () => {
    const other = await stack.startAnother();
    const held = (g: Gateway): string | undefined => g.runtimes()[0]?.pool.nodes.find((n) => n.name === 'c-full-1')?.hold;
    expect((await post(stack.admin('/admin/nodes/l1/c-full-1/drain'), { reason: 'shared' })).status).to.equal(200);
    await until(() => held(other) === 'draining');
    expect(await nodeState(other.adminUrl, 'l1', 'c-full-1')).to.include({ state: 'draining', holdReason: 'shared' });
    const later = await stack.startAnother();
    expect(held(later)).to.equal('draining');
    expect((await post(`${other.adminUrl}/admin/nodes/l1/c-full-1/uncordon`)).status).to.equal(200);
    await until(() => held(stack.gateway) === undefined && held(later) === undefined);
    for (let i = 0; i < 4; i++)
      await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: `x-${i}`, method: 'eth_blockNumber' }, { apikey: stack.key });
    expect(stack.devnet.node('c-full-1').received.filter((r) => r.body.includes('"x-')).length).to.equal(2);
  });
});
