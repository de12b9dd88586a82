// The PrometheusRule of deploy/kubernetes/, made from grafana/alerts.yml (the rules
// Prometheus loads as they are) so the two never drift: `npm run k8s-rules` writes
// it, and test/unit/deploy/kubernetes.test.ts fails while the committed file differs.

import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ALERTS_FILE = 'grafana/alerts.yml';
export const RULE_FILE = 'deploy/kubernetes/prometheus-rule.yaml';

const HEADER = `# GENERATED from ${ALERTS_FILE} by \`npm run k8s-rules\`: edit that file, then run it.
# The Prometheus Operator loads these rules. kube-prometheus-stack selects
# PrometheusRules by its release label by default: add \`release: <your release>\` to
# the labels, or set its ruleSelectorNilUsesHelmValues: false.
`;

/** The PrometheusRule manifest holding the rule groups of `alertsText`, as YAML. */
export function prometheusRuleText(alertsText: string): string {
  const alerts: unknown = parse(alertsText);
  const groups = typeof alerts === 'object' && alerts !== null ? (alerts as { groups?: unknown }).groups : undefined;
  if (!Array.isArray(groups) || groups.length === 0) throw new Error(`${ALERTS_FILE} has no rule groups (groups: [...])`);
  const rule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'noderouter', labels: { 'app.kubernetes.io/name': 'noderouter' } },
    spec: { groups },
  };
  // lineWidth 0: expressions and runbooks stay on the lines alerts.yml gives them.
  return HEADER + stringify(rule, { lineWidth: 0 });
}

/** What RULE_FILE should hold, from the repository's ALERTS_FILE. */
export async function expectedRuleText(): Promise<string> {
  return prometheusRuleText(await readFile(join(ROOT, ALERTS_FILE), 'utf8'));
}
