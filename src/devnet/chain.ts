// One simulated blockchain shared by every devnet node of a network: its height,
// deterministic block hashes (changed by a reorg), block times, the transactions its
// blocks include (bytes under a family-chosen hash), and the timer that mines a block
// every blockTimeMs.

import { createHash } from 'node:crypto';

/** A transaction a block of the chain includes. */
export interface IncludedTx {
  readonly hash: string;
  readonly bytes: Buffer;
  readonly height: number;
  /** Position in its block. */
  readonly index: number;
}

/** A family's block hash: of the block at `height`, whose parent has `parentHash`. */
export type BlockHasher = (height: number, parentHash: string) => string;

const ZERO_HASH = `0x${'0'.repeat(64)}`;
/** Blocks below the start height whose parent hashes are their parents' (see parentHash). */
const LINKED = 256;

export class SimChain {
  private head: number;
  private hasher: BlockHasher | undefined;
  private readonly linkedFrom: number;
  /** Heights rewritten by reorgs, with their generation. */
  private readonly generations = new Map<number, number>();
  private readonly hashes = new Map<number, string>();
  private readonly byHash = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: Array<() => void> = [];
  private readonly sealers: Array<(height: number) => void> = [];
  private readonly txs = new Map<string, IncludedTx>();
  private readonly blockTxs = new Map<number, IncludedTx[]>();
  readonly genesisTime = Math.floor(Date.now() / 1000) - 3_600;

  constructor(
    readonly network: string,
    startHeight: number,
    readonly blockTimeMs: number,
  ) {
    this.head = startHeight;
    this.linkedFrom = Math.max(0, startHeight - LINKED);
    if (blockTimeMs > 0) this.timer = setInterval(() => this.advance(1), blockTimeMs).unref();
  }

  height(): number {
    return this.head;
  }

  advance(blocks = 1): void {
    const n = Math.max(0, Math.floor(blocks));
    if (n === 0) return;
    const first = this.head + 1;
    this.head += n;
    // Pools first, so that subscribers told of the new blocks find their transactions.
    for (const s of this.sealers) s(first);
    for (const l of this.listeners) l();
  }

  /** Called after every advance (nodes push new heads to their subscribers). */
  onBlocks(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Called with the first new height of every advance, before onBlocks listeners (pools include their transactions). */
  onSeal(sealer: (height: number) => void): void {
    this.sealers.push(sealer);
  }

  /** Put a transaction into the block at `height`; a hash already included stays where it is. */
  include(hash: string, bytes: Buffer, height: number): void {
    if (this.txs.has(hash)) return;
    let list = this.blockTxs.get(height);
    if (list === undefined) {
      list = [];
      this.blockTxs.set(height, list);
    }
    const tx: IncludedTx = { hash, bytes, height, index: list.length };
    list.push(tx);
    this.txs.set(hash, tx);
  }

  /** The block that includes a transaction, whatever node asks. */
  tx(hash: string): IncludedTx | undefined {
    return this.txs.get(hash);
  }

  /** The transactions of a block, in order. */
  txsAt(height: number): readonly IncludedTx[] {
    return this.blockTxs.get(height) ?? [];
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

  /**
   * Make block hashes with the family's own rule (EVM: keccak-256 of the RLP header),
   * from the height and its parent's hash; before any is asked for.
   */
  hashBlocksWith(hasher: BlockHasher): void {
    this.hasher = hasher;
  }

  /** A deterministic 0x-prefixed 32 bytes of a height and its generation (a reorg changes it): what a family makes fields of. */
  seed(height: number): string {
    return `0x${createHash('sha256')
      .update(`${this.network}:${height}:${this.generations.get(height) ?? 0}`)
      .digest('hex')}`;
  }

  /**
   * The parent hash the block at `height` names: its parent's hash, except deep in the
   * history before the devnet started (LINKED blocks below its start height), where a
   * stand-in keeps a block's hash from needing every block's down to the first, and past
   * the head.
   */
  parentHash(height: number): string {
    if (height <= 1) return ZERO_HASH;
    // Past the head (a node claiming blocks nobody has) as well: those hashes are not kept.
    return height <= this.linkedFrom || height > this.head ? this.seed(height - 1) : this.hash(height - 1);
  }

  /** 0x-prefixed 32-byte hash of a height: its seed, or the family's hash of its block. */
  hash(height: number): string {
    const known = this.hashes.get(height);
    if (known !== undefined) return known;
    const hasher = this.hasher;
    if (hasher === undefined) return this.remember(height, this.seed(height));
    if (height <= this.linkedFrom) return this.remember(height, hasher(height, this.parentHash(height)));
    // A block past the head may still get transactions: its hash is made each time, never kept.
    if (height > this.head) return hasher(height, this.parentHash(height));
    // Each block's hash covers its parent's: made upwards from the highest one known, never by recursion.
    let from = height;
    while (from > this.linkedFrom + 1 && !this.hashes.has(from - 1)) from--;
    let parent = this.parentHash(from);
    for (let k = from; k <= height; k++) parent = this.remember(k, hasher(k, parent));
    return parent;
  }

  private remember(height: number, h: string): string {
    this.hashes.set(height, h);
    this.byHash.set(h, height);
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
