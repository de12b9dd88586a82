// The bench's optional-feature rows (issue #30): the single eth_blockNumber call where a
// feature is configured but the call does not use it, against the same call with every
// optional feature off ("feature: plain"). A feature set per chain (hedging, verify) is
// an endpoint of one gateway beside the plain one, so its row and the plain row come from
// one process; a feature of the whole gateway (tracing, consensus on another chain,
// restricted keys in the store) is a gateway of its own with the same endpoints, so the
// two processes differ only in that feature.

import type { KeyRestrictions } from '../src/auth/restrictions.js';
import { chainYaml } from './chain-yaml.js';

export const FEATURE_PREFIX = 'feature: ';
export const FEATURE_PLAIN = `${FEATURE_PREFIX}plain`;
/**
 * The plain endpoint again, on a second process with the same config: no feature
 * differs, so its distance from the plain row is the noise a row measured on another
 * process carries in that run (tracing, consensus and restrictions are).
 */
export const FEATURE_CONTROL = `${FEATURE_PREFIX}none, another process`;
/** A BENCH_ONLY entry that selects every feature row. */
export const ALL_FEATURES = 'features';

const HEDGE_OFF = '    hedge: { budgetPercent: 0, minPerSecond: 0 }';

/** One gateway of the feature rows: its chains, more top-level settings, more keys in its store. */
export interface FeatureGateway {
  readonly label: string;
  /** YAML lines under `chains:`. */
  readonly chains: string;
  /** More top-level YAML lines (`tracing: …`); empty for none. */
  readonly top: string;
  /** Keys in the store beside ours, by name, with their restrictions. */
  readonly keys: Readonly<Record<string, KeyRestrictions>>;
}

export interface FeatureRow {
  readonly scenario: string;
  /** The label of the FeatureGateway it is measured on. */
  readonly gateway: string;
  readonly path: string;
  /** A named key of that gateway; absent: ours, unrestricted. */
  readonly key?: string;
}

/**
 * The feature gateways and rows on the upstream's `ports` (three are used). Every
 * endpoint has two nodes, so a hedge would have a node to go to. `collector` is a port
 * nothing listens on: at sampling 0 no span is recorded, so nothing is sent to it.
 */
export function featureSetup(ports: readonly number[], collector: number): { gateways: FeatureGateway[]; rows: FeatureRow[] } {
  const two = ports.slice(0, 2);
  const endpoints = [
    chainYaml('plain', 'evm', two, HEDGE_OFF),
    chainYaml('hedged', 'evm', two),
    chainYaml('observed', 'evm', two, `${HEDGE_OFF}\n    verify: observe`),
  ].join('\n');
  const plain = 'feature endpoints';
  const tracing = 'feature endpoints + tracing';
  const consensus = 'feature endpoints + agreement chain';
  const restricted = 'feature endpoints + restricted keys';
  const control = 'feature endpoints, another process';
  const gateways: FeatureGateway[] = [
    { label: plain, chains: endpoints, top: '', keys: {} },
    { label: control, chains: endpoints, top: '', keys: {} },
    {
      label: tracing,
      chains: endpoints,
      top: `tracing: { endpoint: "http://127.0.0.1:${collector}/v1/traces", sampleRatio: 0 }`,
      keys: {},
    },
    {
      label: consensus,
      chains: [endpoints, chainYaml('agree', 'evm', ports.slice(0, 3), '    consensus: { ask: 3, agree: 2 }')].join('\n'),
      top: '',
      keys: {},
    },
    {
      label: restricted,
      chains: endpoints,
      top: '',
      keys: {
        other: { origins: ['https://app.example'], ips: ['10.0.0.0/8'] },
        // The bench's load comes from loopback: this key passes its allowlist on every call.
        allowlisted: { ips: ['127.0.0.1/32'] },
      },
    },
  ];
  const rows: FeatureRow[] = [
    { scenario: FEATURE_PLAIN, gateway: plain, path: '/plain' },
    { scenario: FEATURE_CONTROL, gateway: control, path: '/plain' },
    { scenario: `${FEATURE_PREFIX}hedging on`, gateway: plain, path: '/hedged' },
    { scenario: `${FEATURE_PREFIX}verify observe`, gateway: plain, path: '/observed' },
    { scenario: `${FEATURE_PREFIX}tracing, sampling 0`, gateway: tracing, path: '/plain' },
    { scenario: `${FEATURE_PREFIX}consensus on another chain`, gateway: consensus, path: '/plain' },
    { scenario: `${FEATURE_PREFIX}restrictions on another key`, gateway: restricted, path: '/plain' },
    { scenario: `${FEATURE_PREFIX}allowlist on the key`, gateway: restricted, path: '/plain', key: 'allowlisted' },
  ];
  return { gateways, rows };
}

/**
 * Whether BENCH_ONLY's list (`only`; undefined: everything) keeps a feature scenario:
 * named, or all of them by `features`; the plain row whenever any feature row is kept,
 * since every feature row is read against it, and the control row, the noise to read
 * them by.
 */
export function featureKept(scenario: string, only: readonly string[] | undefined): boolean {
  if (only === undefined || only.includes(scenario)) return true;
  if (!scenario.startsWith(FEATURE_PREFIX)) return false;
  if (only.includes(ALL_FEATURES)) return true;
  return (scenario === FEATURE_PLAIN || scenario === FEATURE_CONTROL) && only.some((s) => s.startsWith(FEATURE_PREFIX));
}

export interface FeatureFigure {
  readonly scenario: string;
  /** The scenario without its prefix: `hedging on`. */
  readonly feature: string;
  readonly target: string;
  /** The control row (FEATURE_CONTROL): noise, not a feature. */
  readonly control: boolean;
  readonly rps: number;
  readonly cpuUs: number | undefined;
  /** CPU per request against the plain row's (1.02: 2% more); undefined when either was not measured. */
  readonly vsPlain: number | undefined;
}

interface MeasuredRow {
  readonly scenario: string;
  readonly target: string;
  readonly rps: number;
  readonly cpuUs: number | undefined;
  /** CPU per request in each round, in the order measured. */
  readonly cpuUsByRound?: readonly number[];
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * A row's CPU per request against the plain row's: the median of the rounds' ratios,
 * each round's pair measured close in time (rounds alternate the order, so a drift of
 * the machine over a round evens out over two); the ratio of the means when the rounds
 * do not pair up.
 */
function againstPlain(r: MeasuredRow, plain: MeasuredRow | undefined): number | undefined {
  if (r.cpuUs === undefined || plain?.cpuUs === undefined) return undefined;
  const mine = r.cpuUsByRound ?? [];
  const theirs = plain.cpuUsByRound ?? [];
  if (mine.length === 0 || mine.length !== theirs.length) return r.cpuUs / plain.cpuUs;
  return median(mine.map((c, i) => c / (theirs[i] as number)));
}

/** The feature rows of a run, plain first, each against the plain row's CPU per request. */
export function featureFigures(rows: readonly MeasuredRow[]): FeatureFigure[] {
  const plain = rows.find((r) => r.scenario === FEATURE_PLAIN);
  return rows
    .filter((r) => r.scenario.startsWith(FEATURE_PREFIX))
    .sort((a, b) => Number(b.scenario === FEATURE_PLAIN) - Number(a.scenario === FEATURE_PLAIN))
    .map((r) => ({
      scenario: r.scenario,
      feature: r.scenario.slice(FEATURE_PREFIX.length),
      target: r.target,
      control: r.scenario === FEATURE_CONTROL,
      rps: r.rps,
      cpuUs: r.cpuUs,
      vsPlain: againstPlain(r, plain),
    }));
}
