// The bench's check on itself. The upstream answering directly does strictly less work
// than a proxy in front of it, which shares the upstream's core and pays for its own
// hop on top: a Node proxy costs at least what the upstream costs per request (two HTTP
// exchanges against one), so with a load generator that keeps up, "upstream direct"
// comes out about twice as fast as the fastest Node proxy. When it is under 1.5×, or the
// load generator used (nearly) all of its core, the load generator, not the targets,
// set the ceiling, and the other rows' ratios mean nothing: the run fails.
//
// nginx is not held to this: its own cost per request is below the upstream's, so even
// a perfect load generator shows upstream direct only some 1.6× nginx. It is printed
// beside the check for reference.

export const MIN_DIRECT_RATIO = 1.5;

export interface SanityRow {
  readonly target: string;
  readonly rps: number;
  /** Share of a core the load generator used while this row was measured (1 = all of it). */
  readonly loadCpu?: number;
}

/** From this share of its core on, the load generator counts as saturated. */
export const SATURATED = 0.9;

export interface SanityVerdict {
  readonly ok: boolean;
  /** Upstream direct's req/s over the fastest proxy's. */
  readonly ratio: number | undefined;
  readonly message: string;
}

/**
 * `direct` is the upstream-direct row, `proxies` every Node proxy measured under the same
 * conditions (same request, same cores).
 */
export function checkSanity(direct: SanityRow | undefined, proxies: readonly SanityRow[], minRatio = MIN_DIRECT_RATIO): SanityVerdict {
  if (direct === undefined || proxies.length === 0)
    return { ok: false, ratio: undefined, message: 'sanity: FAILED — no "upstream direct" row or no proxy row to compare it with' };
  const fastest = proxies.reduce((a, b) => (b.rps > a.rps ? b : a));
  const ratio = fastest.rps > 0 ? direct.rps / fastest.rps : Number.POSITIVE_INFINITY;
  const figures = `upstream direct ${Math.round(direct.rps)} req/s = ${ratio.toFixed(2)}× the fastest proxy (${fastest.target}, ${Math.round(fastest.rps)} req/s)`;
  const load = direct.loadCpu === undefined ? '' : `, the load generator at ${Math.round(direct.loadCpu * 100)}% of its core`;
  const saturated = direct.loadCpu !== undefined && direct.loadCpu >= SATURATED;
  if (ratio >= minRatio && !saturated)
    return { ok: true, ratio, message: `sanity: ok — ${figures}, at least ${minRatio}× as required${load}` };
  const why = saturated
    ? `the load generator was saturated${load} and set the ceiling`
    : direct.loadCpu === undefined
      ? `under the ${minRatio}× required: the load generator, not the targets, may have set the ceiling`
      : `under the ${minRatio}× required, though the load generator was not saturated${load}: other work on this machine starved the upstream and the targets unevenly`;
  return { ok: false, ratio, message: `sanity: FAILED — ${figures}; ${why}; the ratios of this run mean nothing` };
}
