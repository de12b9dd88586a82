// Usage rows (per key, UTC day and chain, from usage history: src/quota/usage-report.ts)
// summed for the dashboard: today, this month and the last 30 days, and a day × chain
// series for the chart. Pure functions over rows read from the record; reading them is
// the caller's job.

import { dayOf, zeroCounts, type ClassCounts, type DayUsage } from '../quota/usage-report.js';

const DAY_MS = 86_400_000;
export const SERIES_DAYS = 30;

/** The UTC days the dashboard reports on, by the gateway's clock. */
export interface UsageWindow {
  readonly today: string;
  /** 'YYYY-MM' of today. */
  readonly month: string;
  /** Oldest day of the series. */
  readonly first: string;
  /** The series' days, oldest first, today last. */
  readonly days: readonly string[];
  /** The earliest day any figure needs: the series' first day or the 1st of the month. */
  readonly since: string;
}

export function usageWindow(now: number, days = SERIES_DAYS): UsageWindow {
  const today = dayOf(now);
  const list = Array.from({ length: days }, (_, i) => dayOf(now - (days - 1 - i) * DAY_MS));
  const first = list[0] as string;
  const monthStart = `${today.slice(0, 7)}-01`;
  return { today, month: today.slice(0, 7), first, days: list, since: monthStart < first ? monthStart : first };
}

export interface UsageTotals {
  readonly today: ClassCounts;
  readonly month: ClassCounts;
  readonly last30: ClassCounts;
}

function add(into: ClassCounts, r: ClassCounts): void {
  into.calls += r.calls;
  into.units += r.units;
  into.errors += r.errors;
  into.limited += r.limited;
  into.invalid += r.invalid;
}

export function totals(rows: readonly DayUsage[], w: UsageWindow): UsageTotals {
  const today = zeroCounts();
  const month = zeroCounts();
  const last30 = zeroCounts();
  for (const r of rows) {
    if (r.day === w.today) add(today, r);
    if (r.day.startsWith(w.month)) add(month, r);
    if (r.day >= w.first && r.day <= w.today) add(last30, r);
  }
  return { today, month, last30 };
}

/** Calls per chain per day (one number per day of the window), and limited calls per day. */
export interface UsageSeries {
  readonly days: readonly string[];
  readonly chains: ReadonlyArray<{ readonly chain: string; readonly calls: readonly number[] }>;
  readonly limited: readonly number[];
}

export function series(rows: readonly DayUsage[], w: UsageWindow): UsageSeries {
  const index = new Map(w.days.map((d, i) => [d, i]));
  const byChain = new Map<string, number[]>();
  const limited = w.days.map(() => 0);
  for (const r of rows) {
    const i = index.get(r.day);
    if (i === undefined) continue;
    limited[i] = (limited[i] as number) + r.limited;
    if (r.calls === 0) continue;
    let calls = byChain.get(r.chain);
    if (calls === undefined) {
      calls = w.days.map(() => 0);
      byChain.set(r.chain, calls);
    }
    calls[i] = (calls[i] as number) + r.calls;
  }
  const chains = [...byChain].sort(([a], [b]) => a.localeCompare(b)).map(([chain, calls]) => ({ chain, calls }));
  return { days: w.days, chains, limited };
}
