// Logs as SREs read them: one JSON line per request with its id, chain, method,
// node, attempts, outcome, status and duration; the key only as its id and prefix;
// events for node transitions and breakers; x-request-id accepted or generated.

import { expect } from 'chai';
import { createLogger } from '../../src/ops/log.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';

describe('logs and request ids', function () {
  this.timeout(20_000);
  let stack: Stack;
  const lines: string[] = [];
  const records = (): Array<Record<string, unknown>> => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

  before(async () => {
    stack = await startStack({ logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }) });
  });
  after(() => stack.close());

  it('returns the caller’s x-request-id, or a generated one', async () => {
    const given = await rpc(
      stack.url('/l1'),
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { apikey: stack.key, 'x-request-id': 'trace-abc.123' },
    );
    expect(given.headers.get('x-request-id')).to.equal('trace-abc.123');
    const made = await rpc(
      stack.url('/l1'),
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { apikey: stack.key, 'x-request-id': 'bad id with spaces' },
    );
    expect(made.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('writes one JSON line per request with what happened, and the key only as id and prefix', async () => {
    lines.length = 0;
    await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: stack.key, 'x-request-id': 'req-1' });
    await get(stack.url(`/hub/rest/cosmos/auth/v1beta1/params?apikey=${stack.key}`), { 'x-request-id': 'req-2' });
    await rpc(
      stack.url('/l1'),
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' },
      { apikey: 'nrk_' + 'u'.repeat(32), 'x-request-id': 'req-3' },
    );
    const byId = new Map(
      records()
        .filter((r) => r.msg === 'request')
        .map((r) => [r.requestId, r]),
    );
    expect(byId.get('req-1')).to.include({
      chain: 'l1',
      method: 'eth_blockNumber',
      status: 200,
      outcome: 'ok',
      attempts: 1,
      key: stack.key.slice(0, 8),
    });
    expect(byId.get('req-1')?.node).to.be.oneOf(['l1-full-1', 'l1-full-2']);
    expect(byId.get('req-1')?.ms).to.be.a('number');
    expect(byId.get('req-1')?.level).to.equal('info');
    expect(byId.get('req-2')).to.include({ chain: 'hub-rest', method: '/cosmos/auth/v1beta1/params', status: 200 });
    expect(byId.get('req-3')).to.include({ status: 401, outcome: 'invalid_key' });
    for (const l of lines) {
      expect(l).to.not.contain(stack.key);
      expect(l).to.not.contain('u'.repeat(32));
    }
  });

  it('logs node transitions and breaker changes as events, once each', async () => {
    lines.length = 0;
    const rt = stack.gateway.runtimes().find((c) => c.name === 'l1');
    await stack.devnet.node('l1-full-2').setFaults({ down: true });
    await rt?.prober.probeAll();
    await rt?.prober.probeAll();
    await rt?.prober.probeAll();
    rt?.pool.nodes.find((n) => n.name === 'l1-archive-1')?.breaker.open();
    await stack.devnet.node('l1-full-2').clearFaults();
    await rt?.prober.probeAll();
    rt?.pool.nodes.find((n) => n.name === 'l1-archive-1')?.breaker.close();
    // Log lines are written once per event-loop turn.
    await new Promise((r) => setImmediate(r));
    const events = records().filter((r) => r.event !== undefined);
    const rotation = events.filter((e) => e.event === 'node_rotation' && e.node === 'l1-full-2');
    expect(rotation.map((e) => e.inRotation)).to.deep.equal([false, true]);
    expect(rotation[0]).to.include({ level: 'warn', reason: 'probe failed', chain: 'l1' });
    const breaker = events.filter((e) => e.event === 'breaker' && e.node === 'l1-archive-1');
    expect(breaker.map((e) => e.state)).to.deep.equal(['open', 'closed']);
  });
});
