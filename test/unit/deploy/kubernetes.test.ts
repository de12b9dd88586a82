// deploy/kubernetes/ as `kubectl apply -k` reads it: every manifest valid against the
// Kubernetes API's schema and the Prometheus Operator's (kubernetes-models, offline),
// the ConfigMap's config accepted by the gateway's own validation with the Secret's
// values as its environment, and the Deployment's probes, ports and stop timings in
// agreement with that config. The PrometheusRule is the one `npm run k8s-rules` makes.

import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import type { IContainer, IContainerPort, IPodSpec, IProbe } from 'kubernetes-models/v1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import type { GatewayConfig } from '../../../src/config/types.js';
import { ALERTS_FILE, ROOT, RULE_FILE, expectedRuleText } from '../../../deploy/prometheus-rule.js';
import { fieldChecker, type FieldChecker } from '../../support/kubernetes-fields.js';

const DIR = join(ROOT, 'deploy', 'kubernetes');

interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly [field: string]: unknown;
}

interface Kustomization {
  readonly namespace?: string;
  readonly resources: readonly string[];
  readonly configMapGenerator?: readonly { readonly name: string; readonly files: readonly string[] }[];
  readonly images?: readonly { readonly name: string; readonly newName?: string; readonly newTag?: string }[];
}

function model<T>(M: new (data: T) => { validate(): void }): (doc: Manifest) => void {
  return (doc) => new M(doc as T).validate();
}

/** The schema each apiVersion and kind is checked against. */
const SCHEMAS: Readonly<Record<string, (doc: Manifest) => void>> = {
  'v1/Namespace': model(Namespace),
  'v1/Secret': model(Secret),
  'v1/ConfigMap': model(ConfigMap),
  'v1/Service': model(Service),
  'apps/v1/Deployment': model(Deployment),
  'policy/v1/PodDisruptionBudget': model(PodDisruptionBudget),
  'autoscaling/v2/HorizontalPodAutoscaler': model(HorizontalPodAutoscaler),
  'monitoring.coreos.com/v1/ServiceMonitor': model(ServiceMonitor),
  'monitoring.coreos.com/v1/PrometheusRule': model(PrometheusRule),
};

let fields: FieldChecker | undefined;

/** Problems of each manifest against its schema and its declared fields, by file and kind/name. */
function schemaProblems(docs: readonly { readonly file: string; readonly doc: Manifest }[]): string[] {
  fields ??= fieldChecker(ROOT);
  const problems: string[] = [];
  for (const { file, doc } of docs) {
    const where = `${file}: ${doc.kind}/${doc.metadata?.name}`;
    const check = SCHEMAS[`${doc.apiVersion}/${doc.kind}`];
    if (check === undefined) problems.push(`${where}: no schema for ${doc.apiVersion} ${doc.kind}`);
    else {
      try {
        check(doc);
      } catch (err) {
        problems.push(`${where}: ${String(err)}`);
      }
      problems.push(...fields.unknownFields(doc).map((p) => `${where}: ${p}`));
    }
  }
  return problems;
}

function read(file: string): string {
  return readFileSync(join(DIR, file), 'utf8');
}

const kustomization = parse(read('kustomization.yaml')) as Kustomization;

/** The resources of the kustomization, each document with the file it came from. */
function resources(): { readonly file: string; readonly doc: Manifest }[] {
  return kustomization.resources.flatMap((file) =>
    parseAllDocuments(read(file)).map((d) => {
      expect(d.errors, file).to.deep.equal([]);
      return { file, doc: d.toJS() as Manifest };
    }),
  );
}

/** The ConfigMap kustomize generates from gateway.yaml (its name before the hash suffix). */
function generatedConfigMap(): Manifest {
  const [generator] = kustomization.configMapGenerator ?? [];
  expect(generator, 'a configMapGenerator').to.not.equal(undefined);
  const files = generator?.files ?? [];
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: generator?.name ?? '' },
    data: Object.fromEntries(files.map((f) => [basename(f), read(f)])),
  };
}

function one(kind: string, name?: string): Manifest {
  const found = resources()
    .map((r) => r.doc)
    .filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
  expect(found, `${kind} ${name ?? ''}`).to.have.length(1);
  return found[0] as Manifest;
}

const deployment = (): Manifest & {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: IPodSpec };
  };
} => one('Deployment', 'noderouter') as ReturnType<typeof deployment>;

function container(): IContainer {
  const containers = deployment().spec.template.spec.containers;
  expect(containers, 'one container').to.have.length(1);
  return containers[0] as IContainer;
}

/** A probe's or a Service's port (a number or a container port's name) as a number. */
function portNumber(port: number | string | undefined, ports: readonly IContainerPort[]): number | undefined {
  if (typeof port === 'number') return port;
  return ports.find((p) => p.name === port)?.containerPort;
}

/** What the pods' environment gives the config: the Deployment's literal values and the Secret's. */
function podEnv(): NodeJS.ProcessEnv {
  const secret = one('Secret', 'noderouter-secrets') as Manifest & { stringData: Record<string, string> };
  const literal = (container().env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value as string]);
  return { ...secret.stringData, ...Object.fromEntries(literal) };
}

/** The ConfigMap's config as the pods load it (validated as check-config does). */
async function podConfig(): Promise<GatewayConfig> {
  const mount = (container().volumeMounts ?? []).find((m) => m.name === 'config');
  const file = container().env?.find((e) => e.name === 'NODEROUTER_CONFIG')?.value;
  expect(file, 'NODEROUTER_CONFIG').to.be.a('string');
  expect(file?.startsWith(`${mount?.mountPath ?? '(no config mount)'}/`), `${file} is in the config mount`).to.equal(true);
  const data = (generatedConfigMap() as Manifest & { data: Record<string, string> }).data;
  const text = data[basename(file ?? '')];
  expect(text, `the ConfigMap holds ${basename(file ?? '')}`).to.be.a('string');
  return parseConfig(text ?? '', join(DIR, 'gateway.yaml'), podEnv());
}

describe('Kubernetes manifests (deploy/kubernetes/)', () => {
  it('lists every manifest of the folder in kustomization.yaml, and nothing else', () => {
    const generated = new Set((kustomization.configMapGenerator ?? []).flatMap((g) => g.files));
    const onDisk = readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml' && !generated.has(f));
    expect([...kustomization.resources].sort()).to.deep.equal(onDisk.sort());
  });

  it('are each valid against the Kubernetes API schema (the Prometheus Operator’s for its kinds), every field declared', function () {
    this.timeout(20_000);
    const docs = [...resources(), { file: 'configMapGenerator', doc: generatedConfigMap() }];
    const kinds = new Set(docs.map((d) => d.doc.kind));
    for (const kind of Object.keys(SCHEMAS)) expect(kinds.has(kind.split('/').at(-1) ?? ''), kind).to.equal(true);
    expect(schemaProblems(docs)).to.deep.equal([]);
  });

  it('the schema check refuses a broken manifest: a value of the wrong type, a misspelt field', function () {
    this.timeout(20_000);
    const d = structuredClone(deployment());
    const c = d.spec.template.spec.containers[0] as IContainer & Record<string, unknown>;
    (c.ports?.[0] as { containerPort: unknown }).containerPort = 'eighty';
    c.readinessProb = c.readinessProbe;
    const s = structuredClone(one('Service', 'noderouter')) as Manifest & { spec: Record<string, unknown> };
    s.spec.ports = 'http';
    s.spec.selecter = s.spec.selector;
    const problems = schemaProblems([
      { file: 'x', doc: d },
      { file: 'y', doc: s },
    ]);
    expect(problems.filter((p) => p.includes('containerPort must be integer'))).to.have.length(1);
    expect(problems.filter((p) => p.includes('ports must be array'))).to.have.length(1);
    expect(problems.filter((p) => p.endsWith('unknown field'))).to.deep.equal([
      'x: Deployment/noderouter: Deployment.spec.template.spec.containers[0].readinessProb: unknown field',
      'y: Service/noderouter: Service.spec.selecter: unknown field',
    ]);
  });

  it('holds in the ConfigMap a config the gateway accepts, with every ${ENV} from the Secret or the Deployment', async () => {
    const config = await podConfig();
    expect(config.store.record.kind).to.equal('postgres');
    expect(config.store.hot.kind).to.equal('redis');
    // No Secret value goes unread, and the placeholders say they are placeholders.
    const text = read('gateway.yaml');
    const secret = one('Secret', 'noderouter-secrets') as Manifest & { stringData: Record<string, string> };
    for (const [name, value] of Object.entries(secret.stringData)) {
      expect(text, `gateway.yaml reads the Secret's ${name}`).to.match(new RegExp(`\\$\\{${name}(:-[^}]*)?\\}`));
      if (value !== '') expect(value, name).to.contain('PLACEHOLDER');
    }
  });

  it('probes the admin listener: readiness on /health/ready?chains=any, liveness on /health/live', async () => {
    const config = await podConfig();
    const c = container();
    const probe = (p: IProbe | undefined): { path?: string; port?: number } => ({
      path: p?.httpGet?.path,
      port: portNumber(p?.httpGet?.port, c.ports ?? []),
    });
    expect(probe(c.readinessProbe)).to.deep.equal({ path: '/health/ready?chains=any', port: config.server.adminPort });
    expect(probe(c.livenessProbe)).to.deep.equal({ path: '/health/live', port: config.server.adminPort });
    expect(probe(c.startupProbe)).to.deep.equal({ path: '/health/live', port: config.server.adminPort });
    // kubelet probes the pod's address, not the loopback.
    expect(config.server.adminHost).to.equal('0.0.0.0');
  });

  it('has a Service per listener of the config, each reaching its port on the pods', async () => {
    const config = await podConfig();
    const c = container();
    const pods = deployment().spec.template.metadata.labels;
    const target = (name: string): number | undefined => {
      const svc = one('Service', name) as Manifest & {
        spec: { selector: Record<string, string>; ports: { targetPort: number | string }[] };
      };
      for (const [k, v] of Object.entries(svc.spec.selector)) expect(pods[k], `${name} selects the pods by ${k}`).to.equal(v);
      expect(svc.spec.ports, name).to.have.length(1);
      return portNumber(svc.spec.ports[0]?.targetPort, c.ports ?? []);
    };
    expect(target('noderouter')).to.equal(config.server.port);
    expect(target('noderouter-admin')).to.equal(config.server.adminPort);
    expect(target('noderouter-grpc')).to.equal(config.server.grpcPort);
    expect((c.ports ?? []).map((p) => p.containerPort).sort()).to.deep.equal(
      [config.server.port, config.server.adminPort, config.server.grpcPort].sort(),
    );
    // Services reach the pod's address; the gRPC listener starts only for an sdk-grpc chain.
    expect([config.server.host, config.server.grpcHost]).to.deep.equal(['0.0.0.0', '0.0.0.0']);
    expect(
      Object.values(config.chains).some((ch) => ch.plugin === 'sdk-grpc'),
      'a chain on the gRPC listener',
    ).to.equal(true);
    // Nothing in the pods' environment moves a listener off the port its Service names.
    for (const name of ['PORT', 'ADMIN_PORT']) expect(podEnv()[name], name).to.equal(undefined);
    expect(deployment().spec.template.spec.enableServiceLinks).to.equal(false);
    const admin = one('Service', 'noderouter-admin') as Manifest & { spec: { type?: string } };
    expect(admin.spec.type ?? 'ClusterIP', 'the admin Service stays inside the cluster').to.equal('ClusterIP');
  });

  it('times the stop from the config: preStop sleeps shutdownDelayMs, the grace period outlasts the whole drain', async () => {
    const { server } = await podConfig();
    const spec = deployment().spec.template.spec;
    const preStopMs = (container().lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
    expect(preStopMs, 'preStop sleep').to.equal(server.shutdownDelayMs);
    const graceMs = (spec.terminationGracePeriodSeconds ?? 30) * 1000;
    // preStop, then SIGTERM: the gateway's own delay (readiness 503), then the drain.
    expect(graceMs).to.be.greaterThan(preStopMs + server.shutdownDelayMs + server.shutdownTimeoutMs);
    // The admin listener answers through the drain, and liveness would not kill a draining pod anyway.
    const live = container().livenessProbe;
    expect((live?.periodSeconds ?? 10) * (live?.failureThreshold ?? 3) * 1000).to.be.greaterThan(
      server.shutdownDelayMs + server.shutdownTimeoutMs,
    );
  });

  it('runs the pods as non-root on a read-only root filesystem, without privilege escalation or capabilities', () => {
    const spec = deployment().spec.template.spec;
    const c = container();
    expect(spec.securityContext?.runAsNonRoot).to.equal(true);
    expect(spec.securityContext?.runAsUser).to.be.greaterThan(0);
    expect(spec.securityContext?.seccompProfile?.type).to.equal('RuntimeDefault');
    expect(c.securityContext).to.deep.include({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(c.securityContext?.capabilities?.drop).to.deep.equal(['ALL']);
    // Where something is written, a volume of the pod's own.
    const scratch = new Set((spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name));
    const writable = (c.volumeMounts ?? []).filter((m) => m.readOnly !== true && scratch.has(m.name)).map((m) => m.mountPath);
    expect(writable.sort()).to.deep.equal(['/app/data', '/tmp']);
    const ns = one('Namespace');
    expect(ns.metadata.labels?.['pod-security.kubernetes.io/enforce']).to.equal('restricted');
    expect(ns.metadata.name).to.equal(kustomization.namespace);
  });

  it('scales on CPU from the instances the config counts, and keeps a pod through disruptions', async () => {
    const config = await podConfig();
    const d = deployment();
    expect(d.spec.replicas, 'the autoscaler owns replicas').to.equal(undefined);
    const hpa = one('HorizontalPodAutoscaler') as Manifest & {
      spec: {
        scaleTargetRef: { kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
        metrics: { resource?: { name: string } }[];
      };
    };
    expect(hpa.spec.scaleTargetRef).to.deep.include({ kind: 'Deployment', name: d.metadata.name });
    expect(hpa.spec.metrics.map((m) => m.resource?.name)).to.deep.equal(['cpu']);
    expect(container().resources?.requests?.cpu, 'a CPU request for the autoscaler to measure against').to.be.a('string');
    expect(hpa.spec.minReplicas).to.equal(config.store.hot.kind === 'redis' ? config.store.hot.instances : 1);
    const pdb = one('PodDisruptionBudget') as Manifest & {
      spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.selector.matchLabels).to.deep.equal(d.spec.selector.matchLabels);
    expect(pdb.spec.maxUnavailable).to.be.lessThan(hpa.spec.minReplicas);
  });

  it('scrapes /metrics on the admin Service', () => {
    const sm = one('ServiceMonitor') as Manifest & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
    };
    const admin = one('Service', 'noderouter-admin') as Manifest & { spec: { ports: { name: string }[] } };
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) expect(admin.metadata.labels?.[k], k).to.equal(v);
    const others = ['noderouter', 'noderouter-grpc'].map((n) => one('Service', n));
    for (const s of others)
      expect(
        Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
        s.metadata.name,
      ).to.equal(false);
    expect(sm.spec.endpoints).to.deep.equal([{ port: admin.spec.ports[0]?.name, path: '/metrics', interval: '15s', scrapeTimeout: '10s' }]);
  });

  it(`has the PrometheusRule that npm run k8s-rules makes from ${ALERTS_FILE}`, async () => {
    expect(readFileSync(join(ROOT, RULE_FILE), 'utf8'), `${RULE_FILE} differs: run npm run k8s-rules`).to.equal(await expectedRuleText());
    const alerts = parse(readFileSync(join(ROOT, ALERTS_FILE), 'utf8')) as { groups: { rules: { alert: string }[] }[] };
    const rule = one('PrometheusRule') as Manifest & { spec: { groups: { rules: { alert: string }[] }[] } };
    const names = (g: { rules: { alert: string }[] }[]): string[] => g.flatMap((x) => x.rules.map((r) => r.alert));
    expect(names(rule.spec.groups)).to.deep.equal(names(alerts.groups));
    expect(names(alerts.groups).length).to.be.greaterThan(5);
  });

  it('renders with kubectl kustomize into valid objects, the ConfigMap hashed and mounted, the image set', function () {
    this.timeout(60_000);
    const run = spawnSync('kubectl', ['kustomize', DIR], { encoding: 'utf8', timeout: 50_000 });
    if (run.error !== undefined && (run.error as NodeJS.ErrnoException).code === 'ENOENT') this.skip(); // kubectl not installed: the checks above stand
    expect(run.status, run.stderr).to.equal(0);
    const docs = parseAllDocuments(run.stdout).map((d) => ({ file: 'kubectl kustomize', doc: d.toJS() as Manifest }));
    expect(schemaProblems(docs)).to.deep.equal([]);
    const cm = docs.find((d) => d.doc.kind === 'ConfigMap')?.doc;
    expect(cm?.metadata.name).to.match(/^noderouter-config-[a-z0-9]{10}$/);
    const pod = (docs.find((d) => d.doc.kind === 'Deployment')?.doc as ReturnType<typeof deployment>).spec.template.spec;
    expect(pod.volumes?.find((v) => v.name === 'config')?.configMap?.name).to.equal(cm?.metadata.name);
    const image = kustomization.images?.[0];
    expect(pod.containers[0]?.image).to.equal(`${image?.newName}:${image?.newTag}`);
    expect(
      new Set(docs.filter((d) => d.doc.kind !== 'Namespace').map((d) => (d.doc.metadata as { namespace?: string }).namespace)),
    ).to.deep.equal(new Set([kustomization.namespace]));
  });
});
