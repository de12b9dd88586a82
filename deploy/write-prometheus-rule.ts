// `npm run k8s-rules`: writes deploy/kubernetes/prometheus-rule.yaml from
// grafana/alerts.yml.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, RULE_FILE, expectedRuleText } from './prometheus-rule.js';

const file = join(ROOT, RULE_FILE);
await writeFile(file, await expectedRuleText());
process.stdout.write(`wrote ${file}\n`);
