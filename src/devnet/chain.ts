// One simulated blockchain shared by every devnet node of a network: its height,
// deterministic block hashes (changed by a reorg), block times, and the timer that
// mines a block every blockTimeMs.

import { createHash } from 'node:crypto';

export class SimChain {
  private head: number;
  /** Heights rewritten by reorgs, with their generation. */
  private readonly generations = new Map<number, number>();
  private readonly hashes = new Map<number, string>();
  private readonly byHash = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: Array<() => void> = [];
  readonly genesisTime = Math.floor(Date.now() / 1000) - 3_600;

  constructor(
    readonly network: string,
    startHeight: number,
    readonly blockTimeMs: number,
  ) {
    this.head = startHeight;
    if (blockTimeMs > 0) this.timer = setInterval(() => this.advance(1), blockTimeMs).unref();
  }

  height(): number {
    return this.head;
  }

  advance(blocks = 1): void {
    const n = Math.max(0, Math.floor(blocks));
    this.head += n;
    if (n > 0) for (const l of this.listeners) l();
  }

  /** Called after every advance (nodes push new heads to their subscribers). */
  onBlocks(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Replace the last `depth` blocks with blocks of other hashes. */
  reorg(depth: number): void {
    for (let h = Math.max(1, this.head - depth + 1); h <= this.head; h++) {
      const old = this.hashes.get(h);
      if (old !== undefined) this.byHash.delete(old);
      this.hashes.delete(h);
      this.generations.set(h, (this.generations.get(h) ?? 0) + 1);
    }
  }

  /** 0x-prefixed 32-byte hash of a height. */
  hash(height: number): string {
    let h = this.hashes.get(height);
    if (h === undefined) {
      h = `0x${createHash('sha256')
        .update(`${this.network}:${height}:${this.generations.get(height) ?? 0}`)
        .digest('hex')}`;
      this.hashes.set(height, h);
      this.byHash.set(h, height);
    }
    return h;
  }

  /** Height of a block hash, or undefined when no block of this chain has it. */
  heightOf(hash: string): number | undefined {
    const known = this.byHash.get(hash.toLowerCase());
    if (known !== undefined) return known;
    for (let h = this.head; h >= 1; h--) if (this.hash(h) === hash.toLowerCase()) return h;
    return undefined;
  }

  /** Unix seconds of a block. */
  time(height: number): number {
    return this.genesisTime + height * Math.max(1, Math.round(this.blockTimeMs / 1000) || 1);
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }
}

/** A deterministic number from text (balances, counts), stable across runs. */
export function seeded(text: string, modulo: number): number {
  const d = createHash('sha256').update(text).digest();
  return d.readUInt32BE(0) % modulo;
}

export function hexOf(n: number | bigint): string {
  return `0x${n.toString(16)}`;
}
