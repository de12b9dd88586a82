// Tracing from config (src/ops/trace/tracing.ts) against a local OTLP/HTTP receiver: off
// without an endpoint (no span can be asked for), spans exported with the service's
// name and the collector's headers, a client's traceparent continued and its sampling
// decision kept, and failed exports counted and logged once when they start and once
// when they stop, with the collector named by its origin only.

import { expect } from 'chai';
import type { TracingConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/ops/log.js';
import { Metrics } from '../../../src/ops/metrics/metrics.js';
import { ATTR } from '../../../src/ops/trace/request-span.js';
import { startTracing, Tracing } from '../../../src/ops/trace/tracing.js';
import { OtlpReceiver } from '../../support/otlp-receiver.js';
import { until } from '../../support/until.js';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const sampled = (flags: '00' | '01'): string => `00-${CLIENT_TRACE}-00f067aa0ba902b7-${flags}`;

describe('tracing (src/ops/trace/tracing.ts)', () => {
  let receiver: OtlpReceiver;
  let endpoint: string;
  const config = (over: Partial<TracingConfig> = {}): TracingConfig => ({
    endpoint,
    headers: { authorization: 'Bearer collector-token' },
    serviceName: 'noderouter-test',
    sampleRatio: 1,
    // Long: the tests send spans with flush().
    exportIntervalMs: 60_000,
    ...over,
  });

  beforeEach(async () => {
    receiver = new OtlpReceiver();
    endpoint = await receiver.start();
  });
  afterEach(() => receiver.close());

  it('is off without an endpoint: nothing is made, and asking for a span says to check `on` first', async () => {
    const tracing = Tracing.start(config({ endpoint: undefined }), '1.0.0', { exported: () => undefined });
    expect(tracing).to.equal(Tracing.off);
    expect(tracing.on).to.equal(false);
    expect(() => tracing.request('http', 'l1', {})).to.throw('tracing is off: check Tracing.on before asking for a span');
    await tracing.flush();
    await tracing.shutdown();
  });

  it('exports request spans with the service name and version, sending the collector’s headers', async () => {
    const exported: Array<[number, boolean]> = [];
    const tracing = Tracing.start(config(), '1.2.3', { exported: (n, ok) => void exported.push([n, ok]) });
    try {
      expect(tracing.on).to.equal(true);
      const span = tracing.request('http', 'l1', {});
      span.attempt('l1-full-1', 'full', false).end('ok');
      span.end({
        transport: 'http',
        requestId: 'r',
        label: 'eth_chainId',
        outcome: 'ok',
        keyId: 'k',
        tier: 't',
        cache: undefined,
        status: 200,
        attempts: 1,
      });
      await tracing.flush();
      const spans = receiver.trace(span.traceId);
      expect(spans.map((s) => s.name).sort()).to.deep.equal(['attempt l1-full-1', 'l1 eth_chainId']);
      expect(spans.every((s) => s.service === 'noderouter-test')).to.equal(true);
      expect(spans.find((s) => s.kind === 2)?.attributes).to.include({ [ATTR.chain]: 'l1', [ATTR.transport]: 'http' });
      expect(receiver.requests[0]?.authorization).to.equal('Bearer collector-token');
      expect(exported).to.deep.equal([[2, true]]);
    } finally {
      await tracing.shutdown();
    }
  });

  it('continues a client’s traceparent, and keeps its decision not to record even when every trace begun here is', async () => {
    const tracing = Tracing.start(config(), '1.0.0', { exported: () => undefined });
    try {
      const kept = tracing.request('grpc', 'hub-grpc', { traceparent: sampled('01') });
      const dropped = tracing.request('http', 'l1', { traceparent: sampled('00') });
      expect(kept.traceId).to.equal(CLIENT_TRACE);
      expect(dropped.traceId).to.equal(CLIENT_TRACE);
      const end = { requestId: 'r', outcome: 'ok', keyId: undefined, tier: undefined, cache: undefined, status: 0, attempts: 0 } as const;
      kept.end({ ...end, transport: 'grpc', label: 'kept' });
      dropped.end({ ...end, transport: 'http', label: 'dropped' });
      await tracing.flush();
      const spans = receiver.trace(CLIENT_TRACE);
      expect(spans.map((s) => [s.name, s.parentSpanId])).to.deep.equal([['hub-grpc kept', '00f067aa0ba902b7']]);
    } finally {
      await tracing.shutdown();
    }
  });

  it('records none of the traces begun here at a sample ratio of 0, and still a client’s sampled one', async () => {
    const tracing = Tracing.start(config({ sampleRatio: 0 }), '1.0.0', { exported: () => undefined });
    try {
      const end = {
        transport: 'http',
        requestId: 'r',
        outcome: 'ok',
        keyId: undefined,
        tier: undefined,
        cache: undefined,
        status: 200,
        attempts: 0,
      } as const;
      tracing.request('http', 'l1', {}).end({ ...end, label: 'ours' });
      tracing
        .messages({ traceparent: sampled('01') })('l1')
        .end({ ...end, label: 'theirs' });
      await tracing.flush();
      expect(receiver.spans.map((s) => s.name)).to.deep.equal(['l1 theirs']);
      expect(receiver.spans[0]?.attributes[ATTR.transport]).to.equal('ws');
    } finally {
      await tracing.shutdown();
    }
  });

  it('counts failed exports, warns once when they start failing and notes once when they work again, naming the collector by origin', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (s: string) => lines.push(...s.trim().split('\n')) });
    const metrics = new Metrics();
    const tracing = startTracing(config(), metrics, logger);
    const send = async (): Promise<void> => {
      tracing.request('http', 'l1', {}).end({
        transport: 'http',
        requestId: 'r',
        label: 'm',
        outcome: 'ok',
        keyId: undefined,
        tier: undefined,
        cache: undefined,
        status: 200,
        attempts: 0,
      });
      await tracing.flush();
    };
    const counted = async (result: string): Promise<number> =>
      (await metrics.traceSpans.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
    try {
      // A refusal the exporter does not retry, so each batch is one result.
      receiver.status = 400;
      await send();
      await send();
      receiver.status = 200;
      await send();
      await until(async () => (await counted('ok')) === 1, { what: 'the third span is counted' });
      expect(await counted('failed')).to.equal(2);
      await logger.flush();
      const events = lines.map((l) => JSON.parse(l) as { msg: string; collector?: string; ok?: boolean });
      expect(events.map((e) => e.msg)).to.deep.equal([
        'traces exported over OTLP/HTTP',
        'spans could not be exported',
        'spans are exported again',
      ]);
      expect(events[0]?.collector).to.equal(new URL(endpoint).origin);
      // Neither the collector's credentials nor its path (which may carry a token) is logged.
      expect(lines.join('\n')).to.not.contain('collector-token').and.not.contain('/v1/traces');
    } finally {
      await tracing.shutdown();
    }
  });
});
