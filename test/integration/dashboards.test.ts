// Dashboards and alert rules must query what the gateway really exports: traffic of
// every kind is driven through a real stack, /metrics is scraped, and every panel
// expression and alert rule is checked for metric and label names.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { DEFAULT_CHAINS, DEFAULT_TIERS, get, HUB_GRPC, rpc, startStack, type Stack } from '../support/harness.js';
import { alertExprs, checkExpression, dashboards } from '../support/dashboards.js';
import { OUTCOME_LABELS } from '../../src/exec/outcome.js';
import { labelMatches, parseExposition, parsePromQl } from '../support/promql.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';
import { until } from '../support/until.js';

describe('PromQL reading', () => {
  it('finds metrics, matcher labels and grouping labels', () => {
    const refs = parsePromQl(
      'sum by (chain, le) (rate(noderouter_x_bucket{chain=~"$chain",outcome!~"ok|a"}[$__rate_interval])) / clamp_min(sum(noderouter_y), 1e-9) > 0.05',
    );
    expect(refs.selectors).to.deep.equal([
      { metric: 'noderouter_x_bucket', labels: ['chain', 'outcome'] },
      { metric: 'noderouter_y', labels: [] },
    ]);
    expect(refs.grouping).to.deep.equal(['chain', 'le']);
  });
});

describe('PromQL label values', () => {
  it('reads the values of plain matchers, and leaves template variables and real regexes out', () => {
    expect(labelMatches('sum(rate(noderouter_x_total{chain=~"$chain",outcome!~"ok|chain_error",node="a",m=~"eth_.*"}[5m]))')).to.deep.equal(
      [
        { metric: 'noderouter_x_total', label: 'outcome', values: ['ok', 'chain_error'] },
        { metric: 'noderouter_x_total', label: 'node', values: ['a'] },
      ],
    );
  });
});

describe('Grafana dashboards and alert rules', function () {
  this.timeout(30_000);
  let stack: Stack;
  let exported: Map<string, Set<string>>;
  let scrape: string;

  before(async () => {
    stack = await startStack({ chains: [...DEFAULT_CHAINS, HUB_GRPC], tiers: `${DEFAULT_TIERS}  tiny: { rate: 1, burst: 1 }\n` });
    const h = { apikey: stack.key };
    const call = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };
    await rpc(stack.url('/l1'), call, h);
    await rpc(stack.url('/objectx'), { jsonrpc: '2.0', id: 1, method: 'suix_getReferenceGasPrice' }, h);
    await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), h);
    await rpc(
      stack.url('/l1'),
      { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000000aa', 'earliest'] },
      h,
    );
    await rpc(stack.url('/l1'), call, { apikey: 'nrk_' + 'n'.repeat(32) });
    const grpcClient = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('apikey', stack.key);
    await new Promise((resolve) =>
      grpcClient.makeUnaryRequest(
        '/cosmos.auth.v1beta1.Query/Params',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        md,
        resolve,
      ),
    );
    grpcClient.close();
    await rpc(stack.url('/l1'), '{nope', h);
    await stack.devnet.node('l1-full-1').setFaults({ status: 502 });
    for (let i = 0; i < 4; i++) await rpc(stack.url('/l1'), call, h);
    await stack.devnet.node('l1-full-1').clearFaults();
    const tiny = await stack.createKey('tiny');
    for (let i = 0; i < 3; i++) await rpc(stack.url('/l1'), call, { apikey: tiny.value });
    // WebSocket: a subscription sees a head, moves when its node dies, and closes.
    const socket = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: h });
    const sub = (await socket.call('eth_subscribe', ['newHeads'])).result;
    stack.devnet.chains.get('l1')?.advance();
    await socket.note(sub);
    const carrier = [...stack.devnet.nodes.values()].find((n) => n.received.some((r) => r.method === 'WS'));
    await carrier?.setFaults({ down: true });
    await until(() => [...stack.devnet.nodes.values()].filter((n) => n.received.some((r) => r.method === 'WS')).length === 2);
    await carrier?.clearFaults();
    await socket.close();
    await stack.gateway.reload();
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    scrape = (await get(stack.admin('/metrics'))).text;
    exported = parseExposition(scrape);
  });
  after(() => stack.close());

  const check = (where: string, expr: string): void => checkExpression(exported, stack.gateway.metrics.registry, where, expr);

  it('every dashboard is valid JSON with a unique uid, a chain variable and titled panels', async () => {
    const list = await dashboards();
    expect(list.map(([f]) => f).sort()).to.include.members(['keys-and-limits.json', 'nodes.json', 'overview.json']);
    expect(new Set(list.map(([, d]) => d.uid)).size).to.equal(list.length);
    for (const [f, d] of list) {
      expect(
        d.templating.list.map((v) => v.name),
        f,
      ).to.include('chain');
      for (const p of d.panels) expect(p.title, `${f}: a panel without a title`).to.be.a('string').and.not.equal('');
    }
  });

  it('every panel queries metrics and labels the gateway exports', async () => {
    let count = 0;
    for (const [f, d] of await dashboards()) {
      for (const p of d.panels) {
        for (const t of p.targets ?? []) {
          if (t.expr === undefined) continue;
          check(`${f} "${p.title ?? ''}"`, t.expr);
          count++;
        }
      }
      for (const v of d.templating.list) {
        const q = typeof v.query === 'object' && v.query !== null ? (v.query as { query?: string }).query : undefined;
        if (q !== undefined) check(`${f} variable ${v.name}`, q.replace(/^label_values\((.*),\s*\w+\)$/, '$1'));
      }
    }
    expect(count).to.be.greaterThan(20);
  });

  it('every alert rule queries metrics and labels the gateway exports', async () => {
    const rules = await alertExprs();
    expect(rules.map(([a]) => a)).to.include.members([
      'NoderouterNodeDown',
      'NoderouterChainAllNodesDown',
      'NoderouterNodeLagging',
      'NoderouterHighErrorRatio',
      'NoderouterHighP99Latency',
      'NoderouterRateLimitSurge',
      'NoderouterConfigReloadFailed',
      'NoderouterStoreDown',
      'NoderouterSubscriptionsDropped',
      'NoderouterNodeWrongChain',
      'NoderouterNodeRoleMismatch',
      'NoderouterTraceExportFailing',
      'NoderouterHeadNotAdvancing',
      'NoderouterSubmitsRefusedEverywhere',
      'NoderouterChainAllNodesHeld',
      'NoderouterNodeHeldLong',
      'NoderouterNodeDisputed',
    ]);
    for (const [alert, expr] of rules) check(alert, expr);
  });

  it('counts requests of both transports, which the Overview splits', () => {
    expect(scrape).to.match(/noderouter_requests_total\{[^}]*transport="http"\} [1-9]/);
    expect(scrape).to.match(/noderouter_requests_total\{chain="hub-grpc",[^}]*transport="grpc"\} [1-9]/);
  });

  it('names only outcome values the code emits, in the one spelling', async () => {
    const exprs: Array<[string, string]> = [...(await alertExprs())];
    for (const [f, d] of await dashboards())
      for (const p of d.panels) for (const t of p.targets ?? []) if (t.expr !== undefined) exprs.push([`${f} "${p.title ?? ''}"`, t.expr]);
    let checked = 0;
    for (const [where, expr] of exprs) {
      for (const m of labelMatches(expr)) {
        const known = OUTCOME_LABELS.get(m.metric.replace(/_(bucket|sum|count)$/, ''));
        if (m.label !== 'outcome' || known === undefined) continue;
        for (const v of m.values) expect(known, `${where}: ${m.metric} outcome "${v}"`).to.include(v);
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(2);
  });

  it('exports the error outcomes the alert rules name', () => {
    const requests = exported.get('noderouter_requests_total');
    expect(requests?.has('outcome')).to.equal(true);
  });
});
