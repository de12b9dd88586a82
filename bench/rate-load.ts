// An open-loop HTTP load at a fixed rate: requests are due at even intervals whatever
// the answers do, and each one's latency runs from when it was due (so a stall shows
// in the percentiles instead of slowing the load: no coordinated omission). Latency is
// kept to the microsecond; autocannon's histogram rounds to whole milliseconds, too
// coarse to tell a hop's added latency apart. Timers fire late by up to a millisecond or
// so, and a request is due from its slot, not from the late tick: that slack is in every
// target's figures alike, so compare targets by the difference.

import { Pool } from 'undici';
import { percentile } from './measure.js';

export interface RateLoadResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** Requests answered, the unrecorded first second included (for CPU per request). */
  readonly served: number;
}

export interface RateLoadRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
  readonly headers: Record<string, string>;
}

/** Requests at `rate` for `seconds` on `pool`, each one's latency from its due time. */
async function schedule(pool: Pool, req: RateLoadRequest, rate: number, seconds: number): Promise<RateLoadResult> {
  const total = Math.round(rate * seconds);
  const latencies = new Float64Array(total);
  let errors = 0;
  const interval = 1000 / rate;
  const started = performance.now();
  let sent = 0;
  const pending: Array<Promise<void>> = [];

  const one = (due: number, i: number): Promise<void> =>
    pool
      .request({ method: req.method, path: req.path, body: req.body, headers: req.headers })
      .then(async (res) => {
        await res.body.arrayBuffer();
        if (res.statusCode !== 200) errors++;
      })
      .catch(() => {
        errors++;
      })
      .finally(() => {
        latencies[i] = performance.now() - due;
      });

  // A timer tick sends every request that has come due since the last one: timers are
  // coarser than the interval at high rates, and a late tick must not drop requests.
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      for (; sent < total && started + sent * interval <= now; sent++) pending.push(one(started + sent * interval, sent));
      if (sent < total) setTimeout(tick, Math.max(0, started + sent * interval - performance.now()));
      else resolve();
    };
    tick();
  });
  await Promise.all(pending);
  const elapsed = (performance.now() - started) / 1000;
  const sorted = latencies.sort();
  return { rps: total / elapsed, p50: percentile(sorted, 50), p99: percentile(sorted, 99), errors, served: total };
}

/**
 * A fixed-rate load on `connections` connections. The first second is not recorded: it
 * opens the connections and warms this process's own code, whose stalls would otherwise
 * be most of the slowest percent.
 */
export async function rateLoad(
  origin: string,
  req: RateLoadRequest,
  rate: number,
  connections: number,
  seconds: number,
): Promise<RateLoadResult> {
  const pool = new Pool(origin, { connections, pipelining: 1 });
  try {
    const warm = await schedule(pool, req, rate, 1);
    const measured = await schedule(pool, req, rate, seconds);
    return { ...measured, served: warm.served + measured.served };
  } finally {
    await pool.close();
  }
}
