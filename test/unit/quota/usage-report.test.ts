// Usage history as people read it: every outcome the gateway can record falls in a
// class (limits' refusals as limited, refusals before admission as invalid), days and
// chains add up per class, and per method the latency is the admitted calls' only.

import { expect } from 'chai';
import { CLIENT_OUTCOMES } from '../../../src/exec/outcome.js';
import { LATENCY_BUCKETS, type UsageTotals } from '../../../src/quota/usage-history.js';
import { dayRows, methodRows, outcomeClass } from '../../../src/quota/usage-report.js';

const DAY = 86_400_000;
const START = Date.UTC(2026, 4, 10);

/** A summed row of `calls` calls at 2 units each, all in latency bucket `bucket`. */
function row(fields: Partial<UsageTotals> & { outcome: string; calls: number }, bucket = 3): UsageTotals {
  const latency = new Array<number>(LATENCY_BUCKETS).fill(0);
  latency[bucket] = fields.calls;
  return {
    start: undefined,
    keyId: undefined,
    chain: undefined,
    method: undefined,
    cost: 2 * fields.calls,
    nodeCalls: fields.calls,
    bytesIn: 0,
    bytesOut: 0,
    latency,
    ...fields,
  };
}

describe('usage report', () => {
  it('puts every outcome the gateway records in a class: limits as limited, refusals before admission as invalid', () => {
    const classes = Object.fromEntries(CLIENT_OUTCOMES.map((o) => [o, outcomeClass(o)]));
    expect(classes).to.deep.equal({
      ok: 'ok',
      chain_error: 'error',
      cancelled: 'error',
      parse_error: 'invalid',
      invalid_request: 'invalid',
      missing_key: 'invalid',
      conflicting_keys: 'invalid',
      invalid_key: 'invalid',
      forbidden: 'invalid',
      method_not_found: 'invalid',
      invalid_params: 'invalid',
      endpoint_not_found: 'invalid',
      http_method_not_allowed: 'invalid',
      rate_limited: 'limited',
      quota_exceeded: 'limited',
      too_many_connections: 'limited',
      too_many_subscriptions: 'limited',
      node_budget_exceeded: 'error',
      body_too_large: 'invalid',
      batch_too_large: 'limited',
      headers_too_large: 'invalid',
      no_healthy_node: 'error',
      upstream_failed: 'error',
      nodes_disagree: 'error',
      upstream_timeout: 'error',
      unavailable: 'error',
    });
    // An outcome of a later version read by this one is not lost: it counts as an error.
    expect(outcomeClass('some_new_outcome')).to.equal('error');
  });

  it('adds a day’s outcomes up per chain, units only for admitted calls, oldest day first', () => {
    const rows = dayRows([
      row({ start: START + DAY, chain: 'l1', outcome: 'ok', calls: 1 }),
      row({ start: START, chain: 'l1', outcome: 'ok', calls: 5 }),
      row({ start: START, chain: 'l1', outcome: 'chain_error', calls: 2 }),
      row({ start: START, chain: 'l1', outcome: 'rate_limited', calls: 3 }),
      row({ start: START, chain: 'l1', outcome: 'batch_too_large', calls: 1 }),
      row({ start: START, chain: 'l1', outcome: 'invalid_request', calls: 4 }),
      row({ start: START, chain: 'hub', outcome: 'upstream_timeout', calls: 1 }),
    ]);
    expect(rows).to.deep.equal([
      { day: '2026-05-10', chain: 'hub', calls: 1, units: 2, errors: 1, limited: 0, invalid: 0 },
      { day: '2026-05-10', chain: 'l1', calls: 7, units: 14, errors: 2, limited: 4, invalid: 4 },
      { day: '2026-05-11', chain: 'l1', calls: 1, units: 2, errors: 0, limited: 0, invalid: 0 },
    ]);
  });

  it('gives each method its error rate and the percentiles of its admitted calls, the busiest first', () => {
    const methods = methodRows([
      row({ method: 'eth_call', outcome: 'ok', calls: 90 }, 5), // ≤ 50 ms
      row({ method: 'eth_call', outcome: 'upstream_failed', calls: 10 }, 9), // ≤ 1 s
      row({ method: 'eth_call', outcome: 'rate_limited', calls: 500 }, 0), // refusals: not in the latency
      row({ method: 'other', outcome: 'method_not_found', calls: 2 }, 0),
      row({ method: 'eth_getLogs', outcome: 'ok', calls: 1 }, LATENCY_BUCKETS - 1), // past 30 s
    ]);
    expect(methods.map((m) => m.method)).to.deep.equal(['eth_call', 'other', 'eth_getLogs']);
    expect(methods[0]).to.deep.equal({
      method: 'eth_call',
      calls: 100,
      units: 200,
      errors: 10,
      limited: 500,
      invalid: 0,
      errorRate: 0.1,
      p50Ms: 50,
      p95Ms: 1_000,
      p99Ms: 1_000,
    });
    expect(methods[1]).to.deep.include({ calls: 0, invalid: 2, errorRate: null, p50Ms: null });
    expect(methods[2]).to.deep.include({ calls: 1, errorRate: 0, p50Ms: null, p99Ms: null });
  });
});
