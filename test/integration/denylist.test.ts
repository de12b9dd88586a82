// Node administration and the node's keystore are refused on EVM endpoints without
// reaching a node (-32601), alone and in batches, unless the operator allows a method
// for the chain (options.allowMethods; openMethods, its former name, still read).
// Contract-restricted keys: every place a node takes state overrides (trace_call's
// params[3] on reth and erigon among them) makes the call one that may reach any
// contract, refused like eth_call's.

import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import {
  configYaml,
  DEFAULT_TIERS,
  L1_FULL_AND_ARCHIVE,
  rpc,
  startStack,
  storeYaml,
  type ChainSpec,
  type Stack,
} from '../support/harness.js';

const REFUSAL = 'Node administration methods are not served on this endpoint';
const A = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const B = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';

const CHAINS: readonly ChainSpec[] = [
  L1_FULL_AND_ARCHIVE,
  {
    name: 'l2',
    plugin: 'evm',
    path: '/l2',
    // One method allowed by its documented name, one by the former name.
    extra: '    options: { allowMethods: ["eth_sign"], openMethods: ["admin_peers"] }',
    nodes: [{ name: 'l2-full-1', role: 'full' }],
  },
];

/** Refused on every EVM endpoint unless allowed: the node's files, profiling, settings and keys. */
const DENIED = [
  // Files on the node's host: read (a client-chosen path) and written.
  'debug_traceBlockFromFile',
  'debug_standardTraceBlockToFile',
  'debug_standardTraceBadBlockToFile',
  'debug_writeBlockProfile',
  'debug_writeMemProfile',
  'debug_writeMutexProfile',
  'debug_startCPUProfile',
  'debug_stopCPUProfile',
  'debug_startGoTrace',
  'debug_stopGoTrace',
  'debug_cpuProfile',
  'debug_goTrace',
  'debug_blockProfile',
  'debug_mutexProfile',
  // The node's process and database.
  'debug_setGCPercent',
  'debug_setMemoryLimit',
  'debug_setBlockProfileRate',
  'debug_setMutexProfileFraction',
  'debug_setTrieFlushInterval',
  'debug_freeOSMemory',
  'debug_chaindbCompact',
  'debug_chaindbProperty',
  'debug_dbGet',
  'debug_dbAncients',
  'debug_setHead',
  'debug_verbosity',
  'debug_vmodule',
  'debug_backtraceAt',
  'debug_stacks',
  'debug_memStats',
  'debug_gcStats',
  // The node's keystore, in every namespace the chain answers to.
  'eth_sign',
  'eth_signTransaction',
  'eth_sendTransaction',
  'eth_signTypedData',
  'eth_signTypedData_v4',
  'evm_sign',
  'evm_sendTransaction',
  'personal_sign',
  'personal_unlockAccount',
  'personal_listWallets',
  // Peers, mining, the consensus engine, light clients.
  'admin_addPeer',
  'admin_nodeInfo',
  'miner_start',
  'clique_propose',
  'les_serverInfo',
  'engine_newPayloadV3',
  'parity_setMode',
];

interface Item {
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: { readonly code: number; readonly message: string };
}

describe('node administration and keystore denylist; state overrides on contract-restricted keys', function () {
  this.timeout(30_000);
  let stack: Stack;
  let restricted: string;
  const post = (path: string, body: unknown, key = stack.key) => rpc(stack.url(path), body, { apikey: key });
  const item = (method: string, params: unknown[] = [], id: unknown = 1) => ({ jsonrpc: '2.0', id, method, params });
  /** Request bodies the named nodes received that call `method` (by its exact quoted name). */
  const arrived = (nodes: readonly string[], method: string): number =>
    nodes.reduce((n, name) => n + stack.devnet.node(name).received.filter((r) => r.body.includes(`"${method}"`)).length, 0);
  const withMarker = (nodes: readonly string[], marker: string): number =>
    nodes.reduce((n, name) => n + stack.devnet.node(name).received.filter((r) => r.body.includes(marker)).length, 0);
  const ALL = ['l1-full-1', 'l1-archive-1', 'l2-full-1'];

  before(async () => {
    stack = await startStack({ chains: CHAINS });
    restricted = (await stack.createKey('enterprise', { contracts: [A] })).value;
  });
  after(() => stack.close());
  beforeEach(() => {
    for (const n of ALL) stack.devnet.node(n).clearReceived();
  });

  describe('denylist', () => {
    it('refuses each method alone with -32601, reaching no node', async () => {
      for (const method of DENIED) {
        const res = await post('/l1', item(method, ['/etc/passwd']));
        expect(res.status, method).to.equal(200);
        expect((res.json as Item).error, method).to.deep.equal({ code: -32601, message: REFUSAL });
      }
      for (const method of DENIED) expect(arrived(ALL, method), method).to.equal(0);
    });

    it('refuses each in a batch, item by item, while the other items are answered', async () => {
      const batch = [...DENIED.map((m, i) => item(m, ['/tmp/x'], i)), item('eth_blockNumber', [], 'head')];
      const res = await post('/l1', batch);
      expect(res.status).to.equal(200);
      const items = res.json as Item[];
      expect(items).to.have.length(DENIED.length + 1);
      for (const [i, m] of DENIED.entries()) {
        expect(items[i]?.id, m).to.equal(i);
        expect(items[i]?.error, m).to.deep.equal({ code: -32601, message: REFUSAL });
      }
      expect(items[DENIED.length]).to.have.property('result');
      for (const method of DENIED) expect(arrived(ALL, method), method).to.equal(0);
      expect(arrived(['l1-full-1', 'l1-archive-1'], 'eth_blockNumber')).to.equal(1);
    });

    it('serves eth_accounts: a list of addresses, no key used', async () => {
      const res = await post('/l1', item('eth_accounts'));
      expect((res.json as Item).error?.message ?? '').to.not.equal(REFUSAL);
      expect(arrived(['l1-full-1', 'l1-archive-1'], 'eth_accounts')).to.equal(1);
    });

    it('serves a method the operator allowed on that chain only (allowMethods, and openMethods, its former name)', async () => {
      for (const method of ['eth_sign', 'admin_peers']) {
        const l2 = await post('/l2', item(method, [A, '0xdeadbeef']));
        expect((l2.json as Item).error?.message ?? '', method).to.not.equal(REFUSAL);
        expect(arrived(['l2-full-1'], method), method).to.equal(1);
        // Not allowed on l1.
        expect(((await post('/l1', item(method, [A, '0xdeadbeef']))).json as Item).error?.message).to.equal(REFUSAL);
        expect(arrived(['l1-full-1', 'l1-archive-1'], method), method).to.equal(0);
      }
      // What was not allowed on l2 stays refused there, alone and in a batch.
      const res = await post('/l2', [item('eth_sendTransaction', [{ to: A }], 1), item('debug_traceBlockFromFile', ['/etc/passwd'], 2)]);
      for (const i of res.json as Item[]) expect(i.error).to.deep.equal({ code: -32601, message: REFUSAL });
      expect(arrived(['l2-full-1'], 'eth_sendTransaction') + arrived(['l2-full-1'], 'debug_traceBlockFromFile')).to.equal(0);
    });

    it('says clearly what is wrong with an allowMethods setting', async () => {
      const file = join(stack.dir, 'bad-allow.yaml');
      const urls = new Map(ALL.map((n) => [n, stack.devnet.node(n).url]));
      const bad: ChainSpec = { ...(CHAINS[1] as ChainSpec), extra: '    options: { allowMethods: "eth_sign" }' };
      await writeFile(
        file,
        configYaml([CHAINS[0] as ChainSpec, bad], urls, {
          tiers: DEFAULT_TIERS,
          storeYaml: storeYaml(join(stack.dir, 'bad.db')),
          probeIntervalMs: 60_000,
        }),
      );
      let problems: readonly string[] = [];
      try {
        await loadConfig(file);
      } catch (err) {
        if (err instanceof ConfigError) problems = err.problems;
        else throw err;
      }
      expect(problems.join('\n')).to.match(/chains\.l2\.options\.allowMethods.*must be a list of method names or patterns/);
    });
  });

  describe('state overrides on a contract-restricted key', () => {
    const refusedNoContract = (res: { status: number; json: unknown }, what: string): void => {
      expect(res.status, what).to.equal(403);
      const err = (res.json as Item).error;
      expect(err?.code, what).to.equal(-32004);
      expect(err?.message, what).to.match(/names no contract address \(or could reach any\)/);
    };
    const override = { [B]: { code: '0x6000' } };

    it('lets trace_call to a listed contract through, without overrides or with none given', async () => {
      for (const [i, extra] of [[], [null], [{}]].entries()) {
        const marker = `0x7ace${i}`;
        const res = await post('/l1', item('trace_call', [{ to: A, data: marker }, ['trace'], 'latest', ...extra]), restricted);
        expect(res.status).to.equal(200);
        expect((res.json as Item).error?.code).to.not.equal(-32004);
        expect(withMarker(['l1-archive-1'], marker), JSON.stringify(extra)).to.equal(1);
      }
    });

    it('refuses trace_call with state overrides at params[3] (reth) or in a trace config there (erigon), reaching no node', async () => {
      const reth = await post('/l1', item('trace_call', [{ to: A, data: '0xa11ce1' }, ['trace'], 'latest', override]), restricted);
      refusedNoContract(reth, 'reth');
      const erigon = await post(
        '/l1',
        item('trace_call', [{ to: A, data: '0xa11ce2' }, ['trace'], 'latest', { stateOverrides: override }]),
        restricted,
      );
      refusedNoContract(erigon, 'erigon');
      expect(withMarker(ALL, '0xa11ce')).to.equal(0);
    });

    it('refuses every other override parameter and multi-call simulation, alone and in a batch', async () => {
      const tx = (marker: string) => ({ to: A, data: marker });
      const calls: Array<[string, unknown[]]> = [
        ['eth_call', [tx('0xb0b001'), 'latest', override]],
        ['eth_estimateGas', [tx('0xb0b002'), 'latest', override]],
        ['eth_createAccessList', [tx('0xb0b003'), 'latest', override]],
        ['debug_traceCall', [tx('0xb0b004'), 'latest', { tracer: 'callTracer', stateOverrides: override }]],
        ['trace_callMany', [[[tx('0xb0b005'), ['trace']]], 'latest', { stateOverrides: override }]],
        ['eth_callMany', [[{ transactions: [tx('0xb0b006')] }], { blockNumber: 'latest' }, override]],
        ['eth_simulateV1', [{ blockStateCalls: [{ calls: [tx('0xb0b007')], stateOverrides: override }] }, 'latest']],
        ['debug_traceCallMany', [[{ transactions: [tx('0xb0b008')] }], { blockNumber: 'latest' }, {}]],
        // A signed transaction traced whole: its `to` is not read, so it may be any contract.
        ['trace_rawTransaction', ['0xb0b00902f86b', ['trace']]],
      ];
      for (const [method, params] of calls) refusedNoContract(await post('/l1', item(method, params), restricted), method);
      // The same calls in one batch, with one allowed call among them.
      const batch = [...calls.map(([m, p], i) => item(m, p, i)), item('eth_call', [tx('0xca11ed'), 'latest'], 'ok')];
      const res = await post('/l1', batch, restricted);
      expect(res.status).to.equal(200);
      const items = res.json as Item[];
      for (const [i, [m]] of calls.entries()) expect(items[i]?.error?.code, m).to.equal(-32004);
      expect(items[calls.length]).to.have.property('result');
      expect(withMarker(ALL, '0xb0b00')).to.equal(0);
      expect(withMarker(ALL, '0xca11ed')).to.equal(1);
    });

    it('refuses an override member spelt otherwise as an invalid request (a Go node would read it)', async () => {
      const res = await post(
        '/l1',
        item('debug_traceCall', [{ to: A, data: '0xcafe01' }, 'latest', { StateOverrides: override }]),
        restricted,
      );
      expect((res.json as Item).error?.code).to.equal(-32600);
      expect(withMarker(ALL, '0xcafe01')).to.equal(0);
    });

    it('leaves keys without a contracts list alone: overrides go to the node', async () => {
      const res = await post('/l1', item('trace_call', [{ to: A, data: '0xfree01' }, ['trace'], 'latest', override]));
      expect((res.json as Item).error?.code).to.not.equal(-32004);
      expect(withMarker(['l1-archive-1'], '0xfree01')).to.equal(1);
    });
  });
});
