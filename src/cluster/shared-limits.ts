// Limits, quotas, usage and WebSocket connection caps of the memory store, exact
// across workers: the primary holds the one MemoryLimiter (and its usage book and
// file) and the one slot counter; a worker asks it over IPC. An admission is one
// round trip; charges after a call, error and refusal counts are one-way notes (the link is ordered, and a
// worker's last request before it exits proves they all arrived). Slots a worker held
// are given back when it exits, however it exits.

import { GatewayError } from '../errors.js';
import type { TierConfig } from '../config/types.js';
import type { Admission, Payer, RefusedAs } from '../quota/admission.js';
import type { ConnectionSlots } from '../quota/connection-slots.js';
import type { Limiter } from '../quota/limiter.js';
import type { UsageRow } from '../quota/usage.js';
import type { Channel } from './channel.js';

interface AdmitBody {
  readonly id: string;
  readonly account: string;
  readonly tier: TierConfig;
  readonly cost: number;
  readonly chain: string;
}

interface ChargeBody extends AdmitBody {
  readonly as: RefusedAs;
}

type CountBody = readonly [keyId: string, chain: string, n: number];

const unavailable = (cause: unknown): GatewayError =>
  new GatewayError('UNAVAILABLE', { message: 'Limits unavailable', cause, headers: { 'retry-after': '1' } });

/** A worker's limiter: every decision is the primary's. */
export class IpcLimiter implements Limiter {
  constructor(private readonly primary: Channel) {}

  admit(payer: Payer, tier: TierConfig, cost: number, chain: string): Promise<Admission> {
    const body: AdmitBody = { id: payer.id, account: payer.account, tier, cost, chain };
    return this.primary.request<Admission>('limits.admit', body).catch((err: unknown) => {
      throw unavailable(err);
    });
  }

  charge(payer: Payer, tier: TierConfig, cost: number, chain: string): void {
    const body: AdmitBody = { id: payer.id, account: payer.account, tier, cost, chain };
    this.primary.note('limits.charge', body);
  }

  chargeRefused(payer: Payer, tier: TierConfig, cost: number, chain: string, as: RefusedAs): Promise<Admission> {
    const body: ChargeBody = { id: payer.id, account: payer.account, tier, cost, chain, as };
    return this.primary.request<Admission>('limits.refused', body).catch((err: unknown) => {
      throw unavailable(err);
    });
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    this.primary.note('limits.errors', [keyId, chain, errors] satisfies CountBody);
  }

  usage(keyId: string, since?: string): Promise<UsageRow[]> {
    return this.primary.request<UsageRow[]>('limits.usage', [keyId, since ?? '']);
  }

  throttle(bucket: string, perHour: number, burst: number): Promise<number> {
    return this.primary.request<number>('limits.throttle', [bucket, perHour, burst]);
  }

  async close(): Promise<void> {
    // The primary owns the state; nothing to close here.
  }
}

/** A worker's WebSocket slots: taken and given back at the primary. */
export class IpcConnectionSlots implements ConnectionSlots {
  constructor(private readonly primary: Channel) {}

  acquire(keyId: string, slot: string, cap: number): Promise<boolean> {
    return this.primary.request<boolean>('slots.acquire', [keyId, slot, cap]).catch((err: unknown) => {
      throw unavailable(err);
    });
  }

  release(keyId: string, slot: string): void {
    this.primary.note('slots.release', [keyId, slot]);
  }

  async close(): Promise<void> {
    // Held slots are given back by the primary when this worker exits.
  }
}

/** Slots taken through one worker, so they can be given back when it exits. */
export class WorkerSlots {
  private readonly held = new Map<string, string>();

  constructor(private readonly slots: ConnectionSlots) {}

  async acquire(keyId: string, slot: string, cap: number): Promise<boolean> {
    const ok = await this.slots.acquire(keyId, slot, cap);
    if (ok) this.held.set(slot, keyId);
    return ok;
  }

  release(keyId: string, slot: string): void {
    this.held.delete(slot);
    this.slots.release(keyId, slot);
  }

  /** The worker exited: every slot it held is free again. */
  releaseAll(): void {
    for (const [slot, keyId] of this.held) this.slots.release(keyId, slot);
    this.held.clear();
  }
}

/** The primary's side of one worker's link: its limiter and slot requests answered from the shared state. */
export function serveLimits(worker: Channel, limiter: Limiter, slots: WorkerSlots | undefined): void {
  worker.handle('limits.admit', (body) => {
    const b = body as AdmitBody;
    return limiter.admit({ id: b.id, account: b.account }, b.tier, b.cost, b.chain);
  });
  worker.handle('limits.charge', (body) => {
    const b = body as AdmitBody;
    limiter.charge({ id: b.id, account: b.account }, b.tier, b.cost, b.chain);
  });
  worker.handle('limits.refused', (body) => {
    const b = body as ChargeBody;
    return limiter.chargeRefused({ id: b.id, account: b.account }, b.tier, b.cost, b.chain, b.as);
  });
  worker.handle('limits.errors', (body) => {
    const [keyId, chain, n] = body as CountBody;
    limiter.countErrors(keyId, chain, n);
  });
  worker.handle('limits.usage', (body) => {
    const [keyId, since] = body as [string, string];
    return limiter.usage(keyId, since);
  });
  worker.handle('limits.throttle', (body) => {
    const [bucket, perHour, burst] = body as [string, number, number];
    return limiter.throttle(bucket, perHour, burst);
  });
  if (slots === undefined) return;
  worker.handle('slots.acquire', (body) => {
    const [keyId, slot, cap] = body as [string, string, number];
    return slots.acquire(keyId, slot, cap);
  });
  worker.handle('slots.release', (body) => {
    const [keyId, slot] = body as [string, string];
    slots.release(keyId, slot);
  });
}
