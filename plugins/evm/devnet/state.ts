// State reads of a simulated EVM node (balances, nonces, code, storage, calls, gas
// estimates, proofs): deterministic answers from the address and the block, so every
// node of a network agrees. A call whose data starts 0xdeadbeef reverts.

import { hexOf, seeded, type RpcOutcome } from 'noderouter/devnet';
import { ZERO32 } from './blocks.js';

/** State methods (after the namespace) → the position of their block parameter. */
export const STATE_PARAM: ReadonlyMap<string, number> = new Map([
  ['getBalance', 1],
  ['getTransactionCount', 1],
  ['getCode', 1],
  ['getStorageAt', 2],
  ['call', 1],
  ['estimateGas', 1],
  ['getProof', 2],
]);

export function stateAnswer(name: string, params: unknown[], n: number): RpcOutcome {
  const addr = String((name === 'call' || name === 'estimateGas' ? (params[0] as { to?: unknown } | undefined)?.to : params[0]) ?? '');
  switch (name) {
    case 'getBalance':
      return { result: hexOf(BigInt(seeded(`${addr}:${n >> 8}`, 1_000_000) + 1) * 10n ** 15n) };
    case 'getTransactionCount':
      return { result: hexOf(seeded(addr, 500)) };
    case 'getCode':
      return { result: seeded(addr, 2) === 0 ? '0x' : '0x6080604052' };
    case 'getStorageAt':
      return {
        result: `0x${seeded(`${addr}:${String(params[1])}`, 1 << 30)
          .toString(16)
          .padStart(64, '0')}`,
      };
    case 'estimateGas':
      return { result: '0x5208' };
    case 'getProof':
      return {
        result: { address: addr, accountProof: [], balance: '0x0', codeHash: ZERO32, nonce: '0x0', storageHash: ZERO32, storageProof: [] },
      };
    default: {
      const data = String(
        (params[0] as { data?: unknown; input?: unknown } | undefined)?.data ?? (params[0] as { input?: unknown })?.input ?? '',
      );
      if (data.startsWith('0xdeadbeef')) {
        return {
          error: {
            code: 3,
            message: 'execution reverted: devnet revert',
            data: '0x08c379a00000000000000000000000000000000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000d6465766e657420726576657274000000000000000000000000000000000000',
          },
        };
      }
      return {
        result: `0x${seeded(`${addr}:${data}`, 1 << 30)
          .toString(16)
          .padStart(64, '0')}`,
      };
    }
  }
}
