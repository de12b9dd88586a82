// Unknown fields in Kubernetes manifests. The API schema kubernetes-models validates
// against leaves objects open (a misspelt `readinessProb` passes it), while the API
// server's strict field validation, kubectl's default, refuses the manifest. The
// field names are read from kubernetes-models' own type declarations, through the
// TypeScript checker: every key of a manifest must be a property of its type there.

import { join } from 'node:path';
import ts from 'typescript';

/** The declared type of each apiVersion/kind, by the module that declares it. */
const KINDS: Readonly<Record<string, readonly [string, string]>> = {
  'v1/Namespace': ['kubernetes-models/v1/Namespace', 'INamespace'],
  'v1/Secret': ['kubernetes-models/v1/Secret', 'ISecret'],
  'v1/ConfigMap': ['kubernetes-models/v1/ConfigMap', 'IConfigMap'],
  'v1/Service': ['kubernetes-models/v1/Service', 'IService'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'],
  'autoscaling/v2/HorizontalPodAutoscaler': ['kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', 'IHorizontalPodAutoscaler'],
  'monitoring.coreos.com/v1/ServiceMonitor': [
    '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor',
    'IServiceMonitor',
  ],
  'monitoring.coreos.com/v1/PrometheusRule': [
    '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule',
    'IPrometheusRule',
  ],
};

export interface FieldChecker {
  /** `path: unknown field` for each key of `doc` its declared type lacks; [] when it has no declared type. */
  unknownFields(doc: { readonly apiVersion?: unknown; readonly kind?: unknown }): string[];
}

/** Builds a checker over kubernetes-models resolved from `root` (a TypeScript program: about a second). */
export function fieldChecker(root: string): FieldChecker {
  const entry = join(root, '__kubernetes_kinds__.ts');
  const names = Object.keys(KINDS);
  const source = [
    ...names.map((k, i) => `import type { ${KINDS[k]?.[1]} as T${i} } from '${KINDS[k]?.[0]}';`),
    `export interface Kinds { ${names.map((k, i) => `'${k}': T${i};`).join(' ')} }`,
  ].join('\n');
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (file, lang, ...rest) =>
    file === entry ? ts.createSourceFile(file, source, lang) : getSourceFile(file, lang, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (file) => file === entry || fileExists(file);
  const program = ts.createProgram([entry], options, host);
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  if (problems.length > 0) throw new Error(`kubernetes-models' declarations do not load:\n${problems.join('\n')}`);
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(entry);
  const kindsSymbol =
    file === undefined ? undefined : checker.getSymbolAtLocation(file)?.exports?.get(ts.escapeLeadingUnderscores('Kinds'));
  if (kindsSymbol === undefined) throw new Error('no Kinds interface');
  const kinds = checker.getDeclaredTypeOfSymbol(kindsSymbol);

  const walk = (value: unknown, declared: ts.Type, path: string, out: string[]): void => {
    const type = checker.getNonNullableType(declared);
    if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return;
    const members = type.isUnion() ? type.types : [type];
    if (Array.isArray(value)) {
      const array = members.find((m) => checker.isArrayType(m));
      const element = array === undefined ? undefined : checker.getTypeArguments(array as ts.TypeReference)[0];
      if (element !== undefined) value.forEach((v, i) => walk(v, element, `${path}[${i}]`, out));
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const objects = members.filter((m) => m.flags & ts.TypeFlags.Object && !checker.isArrayType(m));
    for (const [key, child] of Object.entries(value)) {
      const at = `${path}.${key}`;
      const index = objects.map((m) => checker.getIndexInfoOfType(m, ts.IndexKind.String)).find((i) => i !== undefined);
      const property = objects.map((m) => m.getProperty(key)).find((p) => p !== undefined);
      if (property !== undefined) walk(child, checker.getTypeOfSymbol(property), at, out);
      else if (index !== undefined) walk(child, index.type, at, out);
      else if (objects.length > 0) out.push(`${at}: unknown field`);
    }
  };

  return {
    unknownFields(doc) {
      const property = kinds.getProperty(`${String(doc.apiVersion)}/${String(doc.kind)}`);
      if (property === undefined) return [];
      const out: string[] = [];
      walk(doc, checker.getTypeOfSymbol(property), String(doc.kind), out);
      return out;
    },
  };
}
