// Durations people write: `90s`, `15m`, `12h`, `7d`, or a bare number of seconds.
// Shared by the config (dashboard.sessionTtl …) and the CLI (--ttl), so both accept
// and refuse the same words.

const DURATION = /^(\d+)\s*(s|m|h|d)?$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v * 1_000 : undefined;
  if (typeof v !== 'string') return undefined;
  const m = DURATION.exec(v.trim());
  if (m === null) return undefined;
  return Number(m[1]) * (UNIT_MS[m[2] ?? 's'] as number);
}

/** `15 minutes`, `12 hours`: for messages and the sign-in link's notice. */
export function describeDuration(ms: number): string {
  for (const [unit, size] of [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms / size === 1 ? '' : 's'}`;
  }
  const seconds = Math.round(ms / 1000);
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}
