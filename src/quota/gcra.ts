// The generic cell rate algorithm: a token bucket kept as one number per key (the
// theoretical arrival time), so bursts at window edges cannot double a limit the way
// fixed windows do. `burst` calls may arrive at once from idle; after that calls
// are admitted at `rate` per second. A state further ahead than the bucket could
// ever be (its tolerance, plus a minute for clocks that differ between instances)
// means the clock stepped back: the bucket starts afresh instead of staying shut
// for as long as the step.

export interface GcraDecision {
  readonly allowed: boolean;
  /** Calls that could still be made right now. */
  readonly remaining: number;
  /** Ms until a call of this cost would be admitted (0 when allowed). */
  readonly retryAfterMs: number;
  /** Ms until the bucket is full again. */
  readonly resetMs: number;
}

/** How far instances' clocks may differ before a state ahead of the tolerance counts as a clock step. */
export const CLOCK_STEP_MS = 60_000;

/**
 * Decide one call of `cost` against the state `tat` (ms; 0 for a new key).
 * Returns the decision and the new tat to store (unchanged when refused).
 */
export function gcra(tat: number, now: number, rate: number, burst: number, cost: number): { decision: GcraDecision; tat: number } {
  const interval = 1000 / rate;
  const tolerance = interval * burst;
  const base = tat > now && tat - now <= tolerance + CLOCK_STEP_MS ? tat : now;
  const next = base + interval * cost;
  const allowAt = next - tolerance;
  if (now < allowAt) {
    const remaining = Math.max(0, Math.floor((tolerance - (base - now)) / interval));
    return { decision: { allowed: false, remaining, retryAfterMs: allowAt - now, resetMs: base - now }, tat };
  }
  const remaining = Math.max(0, Math.floor((tolerance - (next - now)) / interval));
  return { decision: { allowed: true, remaining, retryAfterMs: 0, resetMs: next - now }, tat: next };
}
