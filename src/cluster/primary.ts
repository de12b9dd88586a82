// The primary process of a cluster (server.workers > 1): it forks the workers, which
// share the traffic and gRPC listeners (node:cluster hands each new connection to one
// of them), and keeps what must be one across them: the memory store's limits, quotas,
// usage and WebSocket slots (workers ask over IPC), key writes and operators' holds
// (pushed to every worker, awaited before the admin API answers), one health prober
// per chain (its verdict pushed after every round), the admin listener with one
// aggregated /metrics, and the config (validated here once, then sent to every worker).
// A worker that dies is forked again, at once the first time and with a growing pause
// while it keeps dying; SIGTERM drains every worker as one process drains (the primary
// says when: every worker stops accepting before any closes a connection), then the
// primary closes the shared state last.

import cluster, { type Worker } from 'node:cluster';
import type { StoreChange } from '../auth/key-store.js';
import type { GatewayConfig } from '../config/types.js';
import type { DisputeEntry } from '../exec/policies/disputes.js';
import { Gateway } from '../app/gateway.js';
import type { PoolHealth } from '../pool/pool.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
import { Channel } from './channel.js';
import { ClusterMetrics } from './cluster-metrics.js';
import { disputeNode, drain, markReady, recordDispute, serving } from './primary-state.js';
import { serveLimits, WorkerSlots } from './shared-limits.js';
import type { MetricsJson, WorkerReady } from './worker.js';

const RESTART_MAX_MS = 30_000;
const RESTART_FIRST_MS = 250;
/** A worker that served this long before dying starts its slot's backoff over. */
const STABLE_MS = 30_000;
const ASK_TIMEOUT_MS = 3_000;

interface Slot {
  readonly index: number;
  worker: Worker | undefined;
  channel: Channel | undefined;
  slots: WorkerSlots | undefined;
  startedAt: number;
  /** Deaths in a row without a stable run in between. */
  failures: number;
  timer: NodeJS.Timeout | undefined;
}

/** A message to a worker that just died: its exit handler closes the channel; nothing else to do. */
const ignoreGone = (): void => undefined;

/** How long to wait before forking a worker again after `failures` deaths in a row: none after the first, then doubling to a cap. */
export function restartDelay(failures: number): number {
  return failures === 0 ? 0 : Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** (failures - 1));
}

function timeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(undefined), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      () => {
        clearTimeout(t);
        resolve(undefined);
      },
    );
  });
}

export class ClusterPrimary {
  private readonly slots: Slot[] = [];
  private stopping: Promise<void> | undefined;
  /** Ends SIGTERM's wait (server.shutdownDelayMs) early: SIGINT or a second signal. */
  private endDelay: (() => void) | undefined;
  private starting = true;
  private readonly metrics = new ClusterMetrics();
  private readonly exits = new Set<() => void>();
  url = '';
  grpcAddress = '';

  private constructor(
    private config: GatewayConfig,
    readonly gateway: Gateway,
  ) {}

  /** The primary's gateway (shared state, probers, admin), then every worker listening. */
  static async start(config: GatewayConfig): Promise<ClusterPrimary> {
    // Workers accept on the shared socket themselves. With round-robin the primary accepts
    // and hands each connection over: one handed to a worker the moment it is killed is
    // never answered nor closed; here it stays in the kernel's queue for another worker.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    // Tiers hold Infinity and holds are Maps: they cross as they are.
    cluster.setupPrimary({ serialization: 'advanced' });
    // The hooks run once the primary exists (the first probe round may come before: no worker to tell yet).
    const ref: { self?: ClusterPrimary } = {};
    const gateway = await Gateway.start(config, {
      cluster: {
        role: 'primary',
        hooks: {
          health: (h) => ref.self?.pushHealth(h),
          holds: (h) => ref.self?.tellAll('holds', h) ?? Promise.resolve(),
          keys: (c) => ref.self?.tellAll('keys', c) ?? Promise.resolve(),
          scrape: () => ref.self?.scrape() ?? Promise.resolve(''),
        },
      },
    });
    const self = new ClusterPrimary(config, gateway);
    ref.self = self;
    try {
      const ready = await Promise.all(Array.from({ length: config.server.workers }, (_, i) => self.fork(i)));
      const first = ready[0] as WorkerReady;
      self.url = first.url;
      self.grpcAddress = first.grpcAddress;
      serving(gateway, first.url, first.grpcAddress);
    } catch (err) {
      await self.stop('SIGINT');
      throw err;
    }
    self.starting = false;
    markReady(gateway);
    gateway.logger.info('workers listening', { event: 'start', workers: config.server.workers, url: self.url });
    return self;
  }

  /** Fork the worker of a slot; resolves when it listens. During start, a worker that dies first fails the start. */
  private fork(index: number): Promise<WorkerReady> {
    let slot = this.slots[index];
    if (slot === undefined) {
      slot = { index, worker: undefined, channel: undefined, slots: undefined, startedAt: 0, failures: 0, timer: undefined };
      this.slots[index] = slot;
    }
    const s = slot;
    const worker = cluster.fork({ NODEROUTER_WORKER: String(index) });
    // A worker killed a moment ago still gets the replies to what it asked: the failed write
    // goes to this callback, never to an 'error' event nobody listens to, which would end the
    // primary (and with it every worker's listener: connections refused).
    const channel = new Channel((m) => worker.send(m, undefined, undefined, ignoreGone));
    const slots = this.config.store.hot.kind === 'memory' ? new WorkerSlots(this.gateway.services.bundle.slots) : undefined;
    s.worker = worker;
    s.channel = channel;
    s.slots = slots;
    s.startedAt = Date.now();
    worker.on('message', (m: unknown) => channel.receive(m));
    serveLimits(channel, this.gateway.services.bundle.limiter, slots);
    channel.handle('config', () => this.config);
    channel.handle('health.all', () => this.gateway.runtimes().map((rt) => rt.pool.health()));
    channel.handle('holds.all', () => new Map(this.gateway.holds.all));
    channel.handle('keys.touch', (body) => {
      const [id, at] = body as [string, number];
      this.gateway.store.touch(id, at);
    });
    channel.handle('disputes.add', (body) => recordDispute(this.gateway, body as DisputeEntry));
    channel.handle('nodes.disputed', (body) => {
      const [chain, node, until] = body as [string, string, number];
      const pool = disputeNode(this.gateway, chain, node, until);
      if (pool !== undefined) this.pushHealth(pool.health());
    });
    // Its last request before exiting: every note it sent before has arrived.
    channel.handle('bye', () => true);
    const ready = new Promise<WorkerReady>((resolve, reject) => {
      channel.handle('ready', (body) => {
        this.metrics.workers.set(this.live().length);
        resolve(body as WorkerReady);
      });
      worker.on('exit', (code, signal) => {
        channel.close();
        slots?.releaseAll();
        if (s.worker === worker) {
          s.worker = undefined;
          s.channel = undefined;
          s.slots = undefined;
        }
        this.metrics.workers.set(this.live().length);
        for (const e of this.exits) e();
        reject(new Error(`worker ${index} exited (${signal ?? `code ${code}`}) before it listened`));
        if (this.stopping !== undefined || this.starting) return;
        this.restart(s, code, signal);
      });
    });
    return ready;
  }

  private restart(s: Slot, code: number | null, signal: string | null): void {
    if (Date.now() - s.startedAt >= STABLE_MS) s.failures = 0;
    const delay = restartDelay(s.failures);
    s.failures++;
    this.metrics.restarts.inc({ reason: signal === null ? 'exit' : 'signal' });
    this.gateway.logger.error('worker died; forking it again', {
      event: 'worker_exit',
      worker: s.index,
      code: code ?? undefined,
      signal: signal ?? undefined,
      delayMs: delay,
    });
    s.timer = setTimeout(() => {
      s.timer = undefined;
      if (this.stopping !== undefined) return;
      this.fork(s.index).then(
        (r) => this.gateway.logger.info('worker listening again', { event: 'worker_start', worker: s.index, pid: r.pid }),
        () => undefined,
      );
    }, delay);
  }

  private live(): Array<{ slot: Slot; channel: Channel }> {
    const out: Array<{ slot: Slot; channel: Channel }> = [];
    for (const slot of this.slots) if (slot.channel?.open === true) out.push({ slot, channel: slot.channel });
    return out;
  }

  /** Process ids of the live workers, by slot. */
  pids(): number[] {
    return this.slots.map((s) => s.worker?.process.pid ?? 0);
  }

  private pushHealth(health: PoolHealth): void {
    for (const { channel } of this.live()) channel.note('health', health);
  }

  /** Tell every live worker and wait until each has applied it (or is gone, or too slow). */
  private async tellAll(
    type: 'holds' | 'keys' | 'reload',
    body: ReadonlyMap<string, NodeHoldRecord> | StoreChange | GatewayConfig,
  ): Promise<void> {
    await Promise.all(this.live().map(({ channel }) => timeout(channel.request(type, body), ASK_TIMEOUT_MS)));
  }

  /** One exposition: this process's series (shared state, probers) and every worker's, aggregated per metric. */
  async scrape(): Promise<string> {
    const live = this.live();
    const answers = await Promise.all(live.map(({ channel }) => timeout(channel.request<MetricsJson>('metrics'), ASK_TIMEOUT_MS)));
    return this.metrics.exposition(
      this.gateway.metrics.registry,
      live.map(({ slot }, i) => [slot.index, answers[i]] as const),
    );
  }

  /**
   * SIGHUP or a changed file: validated here once; then this process and every worker
   * swap to it. Refused (logged, counted, the old config serving) when invalid.
   */
  async reload(): Promise<boolean> {
    const next = await this.gateway.readConfig();
    if (next === undefined) return false;
    // server.workers, like every setting read at start, is named in the reload's log line (needsRestart).
    this.config = next;
    await this.gateway.apply(next);
    await this.tellAll('reload', next);
    // New runtimes of the workers take the health the primary holds now.
    for (const rt of this.gateway.runtimes()) this.pushHealth(rt.pool.health());
    return true;
  }

  /**
   * SIGTERM: readiness 503 at once while every worker serves as before for
   * server.shutdownDelayMs; SIGINT (or a second signal) skips the wait. Then every worker
   * closes its copy of the shared listening socket, and only once all have (the socket
   * is closed: a new connection is refused at connect) do they answer what they hold
   * with `connection: close` and exit. A worker that answered `connection: close` while
   * another still listened would send its clients' reconnections into that worker's
   * queue, which the kernel resets when the last copy closes. The shared state closes
   * (usage flushed) once the last worker is gone.
   */
  stop(signal: 'SIGINT' | 'SIGTERM'): Promise<void> {
    if (signal === 'SIGINT' || this.stopping !== undefined) this.endDelay?.();
    this.stopping ??= this.doStop(signal === 'SIGINT' ? 0 : this.config.server.shutdownDelayMs);
    return this.stopping;
  }

  private async doStop(delayMs: number): Promise<void> {
    drain(this.gateway);
    for (const s of this.slots) if (s.timer !== undefined) clearTimeout(s.timer);
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        this.endDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    // Each answer comes after the worker's copy is closed (and Node's note of it, on the same ordered link).
    await Promise.all(this.live().map(({ channel }) => timeout(channel.request('stopAccepting'), ASK_TIMEOUT_MS)));
    for (const { channel } of this.live()) channel.note('shutdown');
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.slots.every((s) => s.worker === undefined)) {
          this.exits.delete(check);
          resolve();
        }
      };
      this.exits.add(check);
      check();
    });
    await this.gateway.close();
  }
}
