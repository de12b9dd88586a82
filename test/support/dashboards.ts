// What the dashboards and alert rules query, and the check that an exposition
// exports it: every metric a panel or rule names, with every label it matches or
// groups by (from the samples, or from the metric's declaration when it has none yet).

import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import type { Registry } from 'prom-client';
import { parse } from 'yaml';
import { parsePromQl } from './promql.js';

const GRAFANA = new URL('../../grafana/', import.meta.url);

interface Panel {
  type: string;
  title?: string;
  targets?: Array<{ expr?: string }>;
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; query?: unknown }> };
}

export async function dashboards(): Promise<Array<[string, Dashboard]>> {
  const dir = new URL('dashboards/', GRAFANA);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));
  return Promise.all(files.map(async (f) => [f, JSON.parse(await readFile(new URL(f, dir), 'utf8')) as Dashboard] as [string, Dashboard]));
}

export async function alertExprs(): Promise<Array<[string, string]>> {
  const doc = parse(await readFile(new URL('alerts.yml', GRAFANA), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
  };
  return doc.groups.flatMap((g) => g.rules.map((r) => [r.alert, r.expr] as [string, string]));
}

/** Labels a metric carries: from its samples, or (no samples yet) from its declaration. */
function labelsOf(exported: Map<string, Set<string>>, declared: Registry, metric: string): Set<string> {
  const seen = exported.get(metric) ?? new Set<string>();
  const base = metric.replace(/_(bucket|sum|count)$/, '');
  const found = declared.getSingleMetric(base) ?? declared.getSingleMetric(metric);
  const names = (found as unknown as { labelNames?: string[] } | undefined)?.labelNames ?? [];
  return new Set([...seen, ...names, ...(metric.endsWith('_bucket') ? ['le'] : [])]);
}

/** One panel or rule expression against an exposition (parseExposition) and the registry declaring the metrics. */
export function checkExpression(exported: Map<string, Set<string>>, declared: Registry, where: string, expr: string): void {
  const refs = parsePromQl(expr);
  expect(refs.selectors.length, `${where}: no metric in ${expr}`).to.be.greaterThan(0);
  const all = new Set<string>();
  for (const s of refs.selectors) {
    expect(exported.has(s.metric), `${where}: ${s.metric} is not exported`).to.equal(true);
    const labels = labelsOf(exported, declared, s.metric);
    for (const l of labels) all.add(l);
    for (const l of s.labels) expect(labels.has(l), `${where}: ${s.metric} has no label ${l}`).to.equal(true);
  }
  for (const g of refs.grouping) expect(all.has(g), `${where}: groups by ${g}, which none of its metrics carries`).to.equal(true);
}

/** Every panel expression, variable query and alert rule of grafana/ against an exposition; returns how many were checked. */
export async function checkAll(exported: Map<string, Set<string>>, declared: Registry): Promise<number> {
  let count = 0;
  for (const [f, d] of await dashboards()) {
    for (const p of d.panels) {
      for (const t of p.targets ?? []) {
        if (t.expr === undefined) continue;
        checkExpression(exported, declared, `${f} "${p.title ?? ''}"`, t.expr);
        count++;
      }
    }
    for (const v of d.templating.list) {
      const q = typeof v.query === 'object' && v.query !== null ? (v.query as { query?: string }).query : undefined;
      if (q !== undefined) checkExpression(exported, declared, `${f} variable ${v.name}`, q.replace(/^label_values\((.*),\s*\w+\)$/, '$1'));
    }
  }
  for (const [alert, expr] of await alertExprs()) {
    checkExpression(exported, declared, alert, expr);
    count++;
  }
  return count;
}
