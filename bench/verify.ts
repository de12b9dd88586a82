// What verify costs per answer: CPU time of the EVM plugin's check (JSON parse, header
// RLP and keccak-256, and with full transactions their encoding and trie root) on real
// mainnet blocks, measured as process CPU time (user + system) so a loaded machine's
// waiting is not counted. `npx tsx --conditions=source bench/verify.ts`

import { readFileSync } from 'node:fs';
import { checkAnswer } from '../plugins/evm/verify/index.js';
import type { JsonRpcCall, JsonRpcReply } from '../src/plugin/contract.js';

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(`../test/fixtures/evm-blocks/${name}.json`, import.meta.url), 'utf8')) as Record<string, unknown>;
}

function cpuMicros(runs: number, f: () => void): number {
  for (let i = 0; i < Math.min(200, runs); i++) f(); // warm up
  const start = process.cpuUsage();
  for (let i = 0; i < runs; i++) f();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / runs;
}

const cases: Array<[string, Record<string, unknown>, boolean, number]> = [
  ['block, hashes only (Prague, mainnet 23094898)', fixture('prague-mainnet-23094898'), false, 5_000],
  ['block, 58 full transactions (London, mainnet 15571241)', fixture('london-15571241-full'), true, 500],
  ['block, 72 full transactions with blobs (Cancun, Goerli 10536893)', fixture('cancun-goerli-10536893'), true, 500],
];

for (const [name, block, full, runs] of cases) {
  const params = [block.number, full];
  const call: JsonRpcCall = { kind: 'jsonrpc', method: 'eth_getBlockByNumber', params, id: '1', raw: '', meta: undefined };
  const text = JSON.stringify({ jsonrpc: '2.0', id: 1, result: block });
  const reply: JsonRpcReply = { kind: 'jsonrpc', status: 200, text, error: undefined };
  if (checkAnswer(call, reply) !== 'verified') throw new Error(`${name}: not verified`);
  const parse = cpuMicros(runs, () => JSON.parse(text));
  const check = cpuMicros(runs, () => checkAnswer(call, reply));
  console.log(
    `${name}: ${check.toFixed(0)} µs CPU per check (of which JSON.parse ${parse.toFixed(0)} µs), answer ${(text.length / 1024).toFixed(1)} KiB`,
  );
}
