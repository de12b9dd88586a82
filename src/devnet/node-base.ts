// What every simulated node shares whatever its transport (HTTP in node-server.ts,
// gRPC in sdk-grpc.ts): its view of the chain (height, held back by the stalled fault;
// retention by role), the record of what it received, and the fault switches (down
// stops the server and up starts it again; clearing hang drops hung calls; clearing
// hold answers the calls it held back).

import type { SimChain } from './chain.js';
import type { NodeFaults, RecordedRequest } from './index.js';

const MAX_RECORDS = 10_000;

export abstract class DevnetNodeBase {
  readonly received: RecordedRequest[] = [];
  url = '';
  protected faults: NodeFaults = {};
  private stalledAt: number | undefined;
  private held: Array<() => void> = [];

  constructor(
    readonly name: string,
    readonly network: string,
    readonly role: 'full' | 'archive',
    readonly chain: SimChain,
    private readonly fullRetention: number,
  ) {}

  abstract listen(): Promise<void>;
  /** Stop serving: connections refused until listen() again. */
  protected abstract stop(): Promise<void>;
  /** Answer or drop every call the hang fault holds. */
  protected abstract releaseHung(): void;

  height(): number {
    const h = this.chain.height();
    return this.stalledAt === undefined ? h : Math.min(h, this.stalledAt);
  }

  earliest(): number {
    return this.role === 'archive' ? 1 : Math.max(1, this.height() - this.fullRetention + 1);
  }

  /** Under the hold fault, keep an answer back until the fault is cleared; true when kept. */
  protected holdBack(answer: () => void): boolean {
    if (this.faults.hold !== true) return false;
    this.held.push(answer);
    return true;
  }

  protected record(r: RecordedRequest): void {
    this.received.push(r);
    if (this.received.length > MAX_RECORDS) this.received.splice(0, this.received.length - MAX_RECORDS);
  }

  clearReceived(): void {
    this.received.length = 0;
  }

  currentFaults(): NodeFaults {
    return { ...this.faults };
  }

  async setFaults(f: NodeFaults): Promise<void> {
    const wasDown = this.faults.down === true;
    this.faults = { ...f };
    this.stalledAt = f.stalled === true ? (this.stalledAt ?? this.chain.height()) : undefined;
    if (f.hang !== true) this.releaseHung();
    if (f.hold !== true) {
      const release = this.held;
      this.held = [];
      for (const answer of release) answer();
    }
    if (f.down === true && !wasDown) await this.stop();
    if (f.down !== true && wasDown) await this.listen();
  }

  clearFaults(): Promise<void> {
    return this.setFaults({});
  }

  close(): Promise<void> {
    return this.stop();
  }
}
