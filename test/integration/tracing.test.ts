// OpenTelemetry traces as a collector sees them: a real gateway with `tracing.endpoint`
// set exports to a local OTLP/HTTP receiver; every request over HTTP (JSON-RPC and
// REST), gRPC and WebSocket is a span continuing the client's traceparent, with one
// child span per attempt on a node, and the node gets the attempt's traceparent.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { get, HUB_GRPC, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';
import { until } from '../support/until.js';

const CHAINS: readonly ChainSpec[] = [
  {
    name: 'l1',
    plugin: 'evm',
    path: '/l1',
    cache: 'memory',
    extra: '    hedge: { minDelayMs: 30, maxDelayMs: 30, perSecond: 100 }',
    nodes: [
      { name: 'l1-full-1', role: 'full' },
      { name: 'l1-full-2', role: 'full' },
      { name: 'l1-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'hub-rest',
    plugin: 'sdk-rest',
    path: '/hub/rest',
    network: 'hub',
    nodes: [{ name: 'hub-rest-full-1', role: 'full' }],
  },
  HUB_GRPC,
];

/** A client's own trace context: a W3C traceparent it sends, sampled. */
function clientTrace(): { traceId: string; parentId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
}

describe('OpenTelemetry traces', function () {
  this.timeout(30_000);
  const receiver = new OtlpReceiver();
  let stack: Stack;
  let key: { id: string; value: string };

  before(async () => {
    const endpoint = await receiver.start();
    stack = await startStack({
      chains: CHAINS,
      extraYaml: `tracing: { endpoint: "${endpoint}", serviceName: noderouter-test, exportIntervalMs: 50, headers: { X-Collector-Token: "c0llect0r" } }`,
    });
    key = await stack.createKey('growth');
  });
  after(async () => {
    await stack.close();
    await receiver.close();
  });

  /** The request span of a trace once it (and `children` attempt spans under it) reached the receiver. */
  async function requestSpan(traceId: string, children = 1): Promise<ReceivedSpan> {
    await stack.gateway.tracing.flush();
    let span: ReceivedSpan | undefined;
    await until(() => {
      span = receiver.trace(traceId).find((s) => s.kind === 2);
      return span !== undefined && receiver.children(span).length >= children;
    });
    return span as ReceivedSpan;
  }

  /** The traceparent headers a devnet node received. */
  function traceparents(node: string): string[] {
    return stack.devnet
      .node(node)
      .received.map((r) => r.headers.traceparent)
      .filter((t): t is string => typeof t === 'string');
  }

  it('makes a span of a JSON-RPC request continuing the client trace, a child per attempt, and passes the attempt on to the node', async () => {
    const t = clientTrace();
    const res = await rpc(
      stack.url('/l1'),
      { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000000a1', 'latest'] },
      { apikey: key.value, traceparent: t.header, 'x-request-id': 'trace-1' },
    );
    expect(res.status).to.equal(200);
    const span = await requestSpan(t.traceId);
    expect(span.parentSpanId).to.equal(t.parentId);
    expect(span.name).to.equal('l1 eth_getBalance');
    expect(span.service).to.equal('noderouter-test');
    expect(span.status).to.equal(0);
    expect(span.attributes).to.include({
      'noderouter.chain': 'l1',
      'noderouter.transport': 'http',
      'noderouter.method': 'eth_getBalance',
      'noderouter.key_id': key.id,
      'noderouter.tier': 'growth',
      'noderouter.outcome': 'ok',
      'noderouter.cache': 'miss',
      'noderouter.request_id': 'trace-1',
      'noderouter.attempts': 1,
      'http.response.status_code': 200,
    });
    const [attempt, ...more] = receiver.children(span);
    expect(more).to.deep.equal([]);
    const node = attempt?.attributes['noderouter.node'] as string;
    expect(attempt).to.deep.include({ kind: 3, name: `attempt ${node}`, status: 0 });
    expect(attempt?.attributes).to.deep.equal({
      'noderouter.node': node,
      'noderouter.node.role': 'full',
      'noderouter.hedge': false,
      'noderouter.verdict': 'ok',
    });
    expect(traceparents(node)).to.include(`00-${t.traceId}-${attempt?.spanId}-01`);
    // The key itself is in no span; the collector got the configured header.
    expect(JSON.stringify(receiver.spans)).not.to.include(key.value);
    expect(receiver.requests.at(-1)?.['x-collector-token']).to.equal('c0llect0r');
  });

  it('starts a trace of its own for a request without a traceparent', async () => {
    for (const n of ['l1-full-1', 'l1-full-2']) stack.devnet.node(n).clearReceived();
    await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 'own', method: 'eth_blockNumber' }, { apikey: key.value });
    const sent = [...traceparents('l1-full-1'), ...traceparents('l1-full-2')];
    expect(sent).to.have.length(1);
    const [, traceId, attemptId] = (sent[0] as string).split('-');
    const span = await requestSpan(traceId as string);
    expect(span.parentSpanId).to.equal(undefined);
    expect(receiver.children(span).map((s) => s.spanId)).to.deep.equal([attemptId]);
  });

  it('marks a cached answer a hit, with no attempt, and a refused key with its outcome and no key id', async () => {
    const call = { jsonrpc: '2.0', id: 2, method: 'eth_chainId' };
    const first = clientTrace();
    const second = clientTrace();
    await rpc(stack.url('/l1'), call, { apikey: key.value, traceparent: first.header });
    const hit = await rpc(stack.url('/l1'), call, { apikey: key.value, traceparent: second.header });
    expect(hit.headers.get('x-cache')).to.equal('HIT');
    expect((await requestSpan(first.traceId)).attributes['noderouter.cache']).to.equal('miss');
    const cached = await requestSpan(second.traceId, 0);
    expect(cached.attributes).to.include({ 'noderouter.cache': 'hit', 'noderouter.attempts': 0, 'noderouter.outcome': 'ok' });
    expect(receiver.children(cached)).to.deep.equal([]);

    const refused = clientTrace();
    const res = await rpc(stack.url('/l1'), call, { apikey: `nrk_${'x'.repeat(32)}`, traceparent: refused.header });
    expect(res.status).to.equal(401);
    const span = await requestSpan(refused.traceId, 0);
    expect(span.attributes).to.include({ 'noderouter.outcome': 'invalid_key', 'http.response.status_code': 401 });
    expect(span.attributes).not.to.have.property('noderouter.key_id');
  });

  it('shows a failed attempt and the attempt that answered after it', async () => {
    await stack.devnet.node('l1-full-1').setFaults({ status: 502 });
    try {
      let span: ReceivedSpan | undefined;
      // Round-robin: one of two calls starts on the failing node.
      for (let i = 0; i < 2 && span === undefined; i++) {
        const t = clientTrace();
        await rpc(
          stack.url('/l1'),
          { jsonrpc: '2.0', id: 3, method: 'eth_getCode', params: [`0x${'b'.repeat(39)}${i}`, 'latest'] },
          {
            apikey: key.value,
            traceparent: t.header,
          },
        );
        const s = await requestSpan(t.traceId);
        if (s.attributes['noderouter.attempts'] === 2) span = s;
      }
      expect(span, 'no call started on the failing node').not.to.equal(undefined);
      await until(() => receiver.children(span as ReceivedSpan).length === 2);
      const attempts = receiver
        .children(span as ReceivedSpan)
        .map((s) => [s.attributes['noderouter.node'], s.attributes['noderouter.verdict'], s.status]);
      expect(attempts).to.have.deep.members([
        ['l1-full-1', 'failure', 2],
        ['l1-full-2', 'ok', 0],
      ]);
    } finally {
      await stack.devnet.node('l1-full-1').clearFaults();
    }
  });

  it('marks the hedged second attempt', async () => {
    await stack.devnet.node('l1-full-1').setFaults({ latencyMs: 250 });
    try {
      let span: ReceivedSpan | undefined;
      for (let i = 0; i < 2 && span === undefined; i++) {
        const t = clientTrace();
        await rpc(
          stack.url('/l1'),
          { jsonrpc: '2.0', id: 4, method: 'eth_getTransactionCount', params: [`0x${'c'.repeat(39)}${i}`, 'latest'] },
          { apikey: key.value, traceparent: t.header },
        );
        const s = await requestSpan(t.traceId);
        if (s.attributes['noderouter.attempts'] === 2) span = s;
      }
      expect(span, 'no call started on the slow node').not.to.equal(undefined);
      // The slow attempt lost; its span ends when its answer comes.
      await until(async () => {
        await stack.gateway.tracing.flush();
        return receiver.children(span as ReceivedSpan).length === 2;
      });
      const attempts = receiver
        .children(span as ReceivedSpan)
        .map((s) => [s.attributes['noderouter.node'], s.attributes['noderouter.hedge']]);
      expect(attempts).to.have.deep.members([
        ['l1-full-1', false],
        ['l1-full-2', true],
      ]);
    } finally {
      await stack.devnet.node('l1-full-1').clearFaults();
    }
  });

  it('passes the traceparent on with a REST call', async () => {
    const t = clientTrace();
    const res = await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: key.value, traceparent: t.header });
    expect(res.status).to.equal(200);
    const span = await requestSpan(t.traceId);
    expect(span.attributes).to.include({ 'noderouter.chain': 'hub-rest', 'noderouter.method': '/cosmos/auth/v1beta1/params' });
    const [attempt] = receiver.children(span);
    expect(traceparents('hub-rest-full-1')).to.include(`00-${t.traceId}-${attempt?.spanId}-01`);
  });

  it('continues a gRPC call’s traceparent metadata and gives the node the attempt’s in its place', async () => {
    const t = clientTrace();
    const client = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('apikey', key.value);
    md.set('traceparent', t.header);
    const raw = (b: Buffer): Buffer => b;
    try {
      await new Promise<void>((resolve, reject) =>
        client.makeUnaryRequest('/cosmos.auth.v1beta1.Query/Params', raw, raw, Buffer.alloc(0), md, (err) =>
          err === null ? resolve() : reject(err),
        ),
      );
    } finally {
      client.close();
    }
    const span = await requestSpan(t.traceId);
    expect(span.parentSpanId).to.equal(t.parentId);
    expect(span.attributes).to.include({
      'noderouter.transport': 'grpc',
      'noderouter.method': '/cosmos.auth.v1beta1.Query/Params',
      'rpc.grpc.status_code': 0,
    });
    const [attempt] = receiver.children(span);
    const node = attempt?.attributes['noderouter.node'] as string;
    const got = stack.devnet
      .node(node)
      .received.filter((r) => r.path === '/cosmos.auth.v1beta1.Query/Params')
      .map((r) => r.headers.traceparent);
    expect(got).to.include(`00-${t.traceId}-${attempt?.spanId}-01`);
    expect(got).not.to.include(t.header);
  });

  it('continues the traceparent of a WebSocket upgrade in every message’s span', async () => {
    const t = clientTrace();
    const socket = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: { apikey: key.value, traceparent: t.header } });
    try {
      await socket.call('eth_getBalance', ['0x00000000000000000000000000000000000000d1', 'latest']);
      await socket.call('eth_getBalance', ['0x00000000000000000000000000000000000000d2', 'latest']);
    } finally {
      await socket.close();
    }
    await stack.gateway.tracing.flush();
    await until(() => receiver.trace(t.traceId).filter((s) => s.kind === 2).length === 2);
    const spans = receiver.trace(t.traceId).filter((s) => s.kind === 2);
    for (const span of spans) {
      expect(span.parentSpanId).to.equal(t.parentId);
      expect(span.attributes).to.include({
        'noderouter.transport': 'ws',
        'noderouter.method': 'eth_getBalance',
        'noderouter.key_id': key.id,
      });
      await until(() => receiver.children(span).length === 1);
    }
    expect(new Set(spans.map((s) => s.spanId)).size).to.equal(2);
  });

  it('counts spans the collector refused', async () => {
    const failed = (text: string): number => Number(/noderouter_trace_spans_exported_total\{result="failed"\} (\d+)/.exec(text)?.[1] ?? 0);
    const before = failed((await get(stack.admin('/metrics'))).text);
    receiver.status = 400;
    try {
      await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 5, method: 'eth_blockNumber' }, { apikey: key.value });
      await stack.gateway.tracing.flush();
      await until(async () => failed((await get(stack.admin('/metrics'))).text) > before);
    } finally {
      receiver.status = 200;
    }
    expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_trace_spans_exported_total\{result="ok"\} [1-9]/);
  });
});

describe('tracing off', function () {
  this.timeout(20_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ chains: [CHAINS[0] as ChainSpec] });
  });
  after(() => stack.close());

  it('makes no span and sends no traceparent of its own or the client’s to JSON-RPC nodes', async () => {
    expect(stack.gateway.tracing.on).to.equal(false);
    const t = clientTrace();
    const res = await rpc(
      stack.url('/l1'),
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' },
      { apikey: stack.key, traceparent: t.header },
    );
    expect(res.status).to.equal(200);
    for (const n of ['l1-full-1', 'l1-full-2', 'l1-archive-1']) {
      expect(stack.devnet.node(n).received.some((r) => r.headers.traceparent !== undefined)).to.equal(false);
    }
  });
});
