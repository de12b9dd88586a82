// Verified EVM blocks (issue 22, point 3) against a real gateway and devnet nodes, one
// of them lying (the devnet's lie fault: blocks whose hash is not their header's). One
// network served by three chain endpoints that differ only in `verify`: under enforce a
// tampered block never reaches the client (another node answers, the liar's failure is
// counted, its head probes fail and it leaves rotation); under observe it is relayed and
// counted; off, nothing is checked. Honest devnet blocks carry real header hashes.

import { expect } from 'chai';
import { privateKeyToAccount } from 'viem/accounts';
import { headerHash } from '../../plugins/evm/verify/header.js';
import { checkBlock } from '../../plugins/evm/verify/index.js';
import { toHex } from '../../plugins/evm/verify/hex.js';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';

const NODES = ['v-full-1', 'v-full-2', 'v-archive-1'] as const;
const LIAR = 'v-full-2';

function chain(name: string, verify: string, own: boolean): ChainSpec {
  return {
    name,
    plugin: 'evm',
    path: `/${name}`,
    network: 'l1',
    extra: `    verify: ${verify}\n    maxAttempts: 3`,
    nodes: NODES.map((n) => ({
      name: own ? n : `${name}-${n}`,
      role: n.includes('archive') ? ('archive' as const) : ('full' as const),
      ...(own ? {} : { sameAs: n }),
    })),
  };
}

type Block = Record<string, unknown> & { hash: string; number: string; stateRoot: string };

describe('verified EVM blocks (verify: off | observe | enforce)', function () {
  this.timeout(30_000);
  let stack: Stack;
  const rt = (name: string) => stack.gateway.runtimes().find((c) => c.name === name);

  before(async () => {
    stack = await startStack({
      chains: [chain('enforce', 'enforce', true), chain('observe', 'observe', false), chain('off', 'off', false)],
    });
  });
  after(() => stack.close());
  afterEach(() => stack.devnet.node(LIAR).clearFaults());

  async function block(endpoint: string, params: unknown[]): Promise<{ status: number; block: Block | undefined; text: string }> {
    const res = await rpc(
      stack.url(`/${endpoint}`),
      { jsonrpc: '2.0', id: 7, method: 'eth_getBlockByNumber', params },
      { apikey: stack.key },
    );
    const body = res.json as { result?: Block };
    return { status: res.status, block: body.result, text: res.text };
  }

  const metrics = async (): Promise<string> => (await get(stack.admin('/metrics'))).text;
  const count = (text: string, labels: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`noderouter_answer_checks_total{${labels}}`));
    return line === undefined ? 0 : Number(line.split(' ').pop());
  };

  it('honest devnet blocks have hashes that are keccak-256 of their RLP header, linked to their parents', async () => {
    const head = stack.devnet.chains.get('l1')?.height() as number;
    for (const n of [head, head - 1]) {
      const { status, block: b } = await block('enforce', [`0x${n.toString(16)}`, true]);
      expect(status).to.equal(200);
      expect(toHex(headerHash(b as Block))).to.equal(b?.hash);
    }
    const parent = await block('enforce', [`0x${(head - 1).toString(16)}`, false]);
    const child = await block('enforce', [`0x${head.toString(16)}`, false]);
    expect(child.block?.parentHash).to.equal(parent.block?.hash);
    expect(count(await metrics(), 'chain="enforce",node="v-full-1",method="eth_getBlockByNumber",result="verified"')).to.be.above(0);
  });

  it('a devnet block with legacy, access-list and dynamic-fee transactions passes with full transactions', async () => {
    const account = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
    const to = '0x00000000000000000000000000000000000000bb';
    const raws = [
      await account.signTransaction({ type: 'legacy', chainId: 1, to, value: 1n, nonce: 0, gas: 21_000n, gasPrice: 3n }),
      await account.signTransaction({
        type: 'eip2930',
        chainId: 1,
        to,
        value: 2n,
        nonce: 1,
        gas: 30_000n,
        gasPrice: 3n,
        accessList: [{ address: to, storageKeys: [`0x${'00'.repeat(31)}01`] }],
      }),
      await account.signTransaction({
        chainId: 1,
        to,
        value: 3n,
        nonce: 2,
        gas: 21_000n,
        maxFeePerGas: 2_000_000_000n,
        maxPriorityFeePerGas: 1n,
      }),
    ];
    for (const raw of raws) {
      const res = await rpc(
        stack.url('/enforce'),
        { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] },
        { apikey: stack.key },
      );
      expect((res.json as { result?: string }).result).to.be.a('string');
    }
    const chainOf = stack.devnet.chains.get('l1');
    chainOf?.advance();
    const n = chainOf?.height() as number;
    const { status, block: b } = await block('enforce', [`0x${n.toString(16)}`, true]);
    expect(status).to.equal(200);
    expect((b?.transactions as unknown[]).length).to.equal(3);
    expect(b?.transactionsRoot).to.not.equal('0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421');
    expect(checkBlock(b as Block, b?.number, false, true)).to.equal('verified');
  });

  it('enforce: a tampered block never reaches the client; the liar is counted failing and leaves rotation', async () => {
    await stack.devnet.node(LIAR).setFaults({ lie: true });
    stack.devnet.node(LIAR).clearReceived();
    const head = stack.devnet.chains.get('l1')?.height() as number;
    const before = await metrics();
    // Round-robin over the full nodes: the liar gets about half of these first.
    for (let i = 0; i < 6; i++) {
      const n = head - i;
      const { status, block: b } = await block('enforce', [`0x${n.toString(16)}`, false]);
      expect(status).to.equal(200);
      expect(toHex(headerHash(b as Block)), `block ${n}`).to.equal(b?.hash);
      expect(b?.stateRoot.startsWith('0x11')).to.equal(false);
    }
    expect(stack.devnet.node(LIAR).received.length).to.be.above(0);
    const after = await metrics();
    const mismatch = 'chain="enforce",node="v-full-2",method="eth_getBlockByNumber",result="mismatch"';
    expect(count(after, mismatch) - count(before, mismatch)).to.equal(stack.devnet.node(LIAR).received.length);
    expect(after).to.match(/noderouter_upstream_requests_total\{chain="enforce",node="v-full-2",outcome="failure"\} [1-9]/);
    expect(after).to.match(/noderouter_retries_total\{chain="enforce",reason="failure"\} [1-9]/);

    // Its head probes read a block that is not its header's: failed probes, out of rotation.
    const enforce = rt('enforce');
    for (let i = 0; i < 2; i++) await enforce?.prober.probeAll();
    expect(enforce?.pool.nodes.map((n) => [n.name, n.inRotation])).to.deep.equal([
      ['v-full-1', true],
      ['v-full-2', false],
      ['v-archive-1', true],
    ]);
    expect(count(await metrics(), 'chain="enforce",node="v-full-2",method="probe",result="mismatch"')).to.be.above(0);

    await stack.devnet.node(LIAR).clearFaults();
    await enforce?.prober.probeAll();
    expect(enforce?.pool.nodes.every((n) => n.inRotation)).to.equal(true);
  });

  it('observe: the tampered block is relayed and counted; probes do not take the node out', async () => {
    await stack.devnet.node(LIAR).setFaults({ lie: true });
    const before = await metrics();
    const head = stack.devnet.chains.get('l1')?.height() as number;
    let tampered = 0;
    for (let i = 0; i < 4; i++) {
      const { status, block: b } = await block('observe', [`0x${(head - i).toString(16)}`, false]);
      expect(status).to.equal(200);
      if (toHex(headerHash(b as Block)) !== b?.hash) tampered++;
    }
    expect(tampered).to.be.above(0);
    const after = await metrics();
    const mismatch = 'chain="observe",node="observe-v-full-2",method="eth_getBlockByNumber",result="mismatch"';
    expect(count(after, mismatch) - count(before, mismatch)).to.equal(tampered);
    expect(after).not.to.match(/noderouter_upstream_requests_total\{chain="observe",node="observe-v-full-2",outcome="failure"\}/);

    const observe = rt('observe');
    for (let i = 0; i < 2; i++) await observe?.prober.probeAll();
    expect(observe?.pool.nodes.every((n) => n.inRotation)).to.equal(true);
    expect(count(await metrics(), 'chain="observe",node="observe-v-full-2",method="probe",result="mismatch"')).to.be.above(0);
  });

  it('off: nothing is checked or counted', async () => {
    await stack.devnet.node(LIAR).setFaults({ lie: true });
    const head = stack.devnet.chains.get('l1')?.height() as number;
    let tampered = 0;
    for (let i = 0; i < 4; i++) {
      const { block: b } = await block('off', [`0x${(head - i).toString(16)}`, false]);
      if (toHex(headerHash(b as Block)) !== b?.hash) tampered++;
    }
    expect(tampered).to.be.above(0);
    for (let i = 0; i < 2; i++) await rt('off')?.prober.probeAll();
    expect(await metrics()).not.to.contain('noderouter_answer_checks_total{chain="off"');
  });
});
