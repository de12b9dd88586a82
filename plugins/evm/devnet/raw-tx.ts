// Reads a signed raw transaction as eth_sendRawTransaction receives it: RLP, legacy or
// typed (EIP-2930 access lists, EIP-1559 fees), into the fields geth shows for it. The
// signature is not checked and the sender not recovered (no secp256k1 here), so the
// devnet shows the zero address as `from`. Errors carry geth's wording.

export interface RawTx {
  readonly type: 0 | 1 | 2;
  readonly chainId: bigint | undefined;
  readonly nonce: bigint;
  /** Fee cap: gasPrice of legacy and access-list transactions, maxFeePerGas of EIP-1559 ones. */
  readonly maxFee: bigint;
  readonly tip: bigint | undefined;
  readonly gas: bigint;
  /** null: a contract creation. */
  readonly to: string | null;
  readonly value: bigint;
  readonly input: Buffer;
  readonly accessList: ReadonlyArray<{ readonly address: string; readonly storageKeys: readonly string[] }> | undefined;
  readonly v: bigint;
  readonly r: bigint;
  readonly s: bigint;
}

type Rlp = Buffer | Rlp[];

class RlpError extends Error {}

function length(buf: Buffer, at: number, size: number): number {
  if (at + size > buf.length) throw new RlpError('rlp: value size exceeds available input length');
  let n = 0;
  for (let i = 0; i < size; i++) n = n * 256 + (buf[at + i] as number);
  return n;
}

/** One RLP item at `at`, and where the next one starts. */
function item(buf: Buffer, at: number): [Rlp, number] {
  const b = buf[at];
  if (b === undefined) throw new RlpError('rlp: value size exceeds available input length');
  if (b < 0x80) return [buf.subarray(at, at + 1), at + 1];
  const list = b >= 0xc0;
  const short = list ? b <= 0xf7 : b <= 0xb7;
  const sizeOfSize = short ? 0 : b - (list ? 0xf7 : 0xb7);
  const size = short ? b - (list ? 0xc0 : 0x80) : length(buf, at + 1, sizeOfSize);
  const start = at + 1 + sizeOfSize;
  const end = start + size;
  if (end > buf.length) throw new RlpError('rlp: value size exceeds available input length');
  if (!list) return [buf.subarray(start, end), end];
  const items: Rlp[] = [];
  for (let p = start; p < end;) {
    const [v, next] = item(buf, p);
    items.push(v);
    p = next;
  }
  return [items, end];
}

function list(v: Rlp | undefined, what: string): Rlp[] {
  if (!Array.isArray(v)) throw new RlpError(`rlp: expected input list for ${what}`);
  return v;
}

function bytes(v: Rlp | undefined): Buffer {
  if (v === undefined || Array.isArray(v)) throw new RlpError('rlp: expected input string or byte');
  return v;
}

function uint(v: Rlp | undefined): bigint {
  const b = bytes(v);
  return b.length === 0 ? 0n : BigInt(`0x${b.toString('hex')}`);
}

const hex = (b: Buffer): string => `0x${b.toString('hex')}`;

function accessList(v: Rlp | undefined): RawTx['accessList'] {
  return list(v, 'types.AccessList').map((entry) => {
    const [address, keys] = list(entry, 'types.AccessTuple');
    return { address: hex(bytes(address)), storageKeys: list(keys, '[]common.Hash').map((k) => hex(bytes(k))) };
  });
}

const FIELD_COUNTS = { 0: 9, 1: 11, 2: 12 } as const;

/** The transaction, or geth's error message for bytes that are not one. */
export function decodeRawTx(raw: Buffer): RawTx | string {
  const first = raw[0];
  if (first === undefined) return 'typed transaction too short';
  const type = first >= 0xc0 ? 0 : first;
  if (type !== 0 && type !== 1 && type !== 2) return 'transaction type not supported';
  try {
    const [decoded, end] = item(raw, type === 0 ? 0 : 1);
    if (end !== raw.length) return 'rlp: input contains more than one value';
    const f = list(decoded, 'types.LegacyTx');
    if (f.length !== FIELD_COUNTS[type]) return `rlp: too ${f.length < FIELD_COUNTS[type] ? 'few' : 'many'} elements for transaction`;
    const to = bytes(type === 0 ? f[3] : type === 1 ? f[4] : f[5]);
    const common = { to: to.length === 0 ? null : hex(to), v: uint(f[f.length - 3]), r: uint(f[f.length - 2]), s: uint(f[f.length - 1]) };
    if (type === 0) {
      const v = common.v;
      // EIP-155: v = chainId * 2 + 35 or 36; 27/28 carry no chain id.
      const chainId = v >= 35n ? (v - 35n) / 2n : undefined;
      return {
        ...common,
        type,
        chainId,
        nonce: uint(f[0]),
        maxFee: uint(f[1]),
        tip: undefined,
        gas: uint(f[2]),
        value: uint(f[4]),
        input: bytes(f[5]),
        accessList: undefined,
      };
    }
    const fees = type === 1 ? { maxFee: uint(f[2]), tip: undefined, rest: 3 } : { maxFee: uint(f[3]), tip: uint(f[2]), rest: 4 };
    return {
      ...common,
      type,
      chainId: uint(f[0]),
      nonce: uint(f[1]),
      maxFee: fees.maxFee,
      tip: fees.tip,
      gas: uint(f[fees.rest]),
      value: uint(f[fees.rest + 2]),
      input: bytes(f[fees.rest + 3]),
      accessList: accessList(f[fees.rest + 4]),
    };
  } catch (err) {
    if (err instanceof RlpError) return err.message;
    throw err;
  }
}
