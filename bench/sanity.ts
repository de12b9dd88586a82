// The bench's check on itself. The upstream answering directly does strictly less work
// than any proxy in front of it (which pays for its own hop and shares the upstream's
// core with it), so "upstream direct" must come out well above every proxy. When it
// does not, the load generator, not the targets, set the ceiling, and the other rows'
// ratios mean nothing: the run fails.

export const MIN_DIRECT_RATIO = 1.5;

export interface SanityRow {
  readonly target: string;
  readonly rps: number;
  /** Share of a core the load generator used while this row was measured (1 = all of it). */
  readonly loadCpu?: number;
}

/** Above this share of its core, the load generator counts as saturated. */
const SATURATED = 0.9;

export interface SanityVerdict {
  readonly ok: boolean;
  /** Upstream direct's req/s over the fastest proxy's. */
  readonly ratio: number | undefined;
  readonly message: string;
}

/**
 * `direct` is the upstream-direct row, `proxies` every proxy measured under the same
 * conditions (same request, same cores).
 */
export function checkSanity(direct: SanityRow | undefined, proxies: readonly SanityRow[], minRatio = MIN_DIRECT_RATIO): SanityVerdict {
  if (direct === undefined || proxies.length === 0)
    return { ok: false, ratio: undefined, message: 'sanity: FAILED — no "upstream direct" row or no proxy row to compare it with' };
  const fastest = proxies.reduce((a, b) => (b.rps > a.rps ? b : a));
  const ratio = fastest.rps > 0 ? direct.rps / fastest.rps : Number.POSITIVE_INFINITY;
  const figures = `upstream direct ${Math.round(direct.rps)} req/s = ${ratio.toFixed(2)}× the fastest proxy (${fastest.target}, ${Math.round(fastest.rps)} req/s)`;
  return ratio >= minRatio
    ? { ok: true, ratio, message: `sanity: ok — ${figures}, at least ${minRatio}× as required` }
    : {
        ok: false,
        ratio,
        message: `sanity: FAILED — ${figures}, under the ${minRatio}× required: ${why(direct.loadCpu)}; the ratios of this run mean nothing`,
      };
}

/** Why upstream direct came out too close to a proxy, from the load generator's own CPU. */
function why(loadCpu: number | undefined): string {
  if (loadCpu === undefined) return 'the load generator, not the targets, may have set the ceiling';
  const share = `${Math.round(loadCpu * 100)}% of its core`;
  return loadCpu >= SATURATED
    ? `the load generator was saturated (${share}) and set the ceiling`
    : `the load generator was not saturated (${share}): other work on this machine starved the upstream and the targets unevenly`;
}
