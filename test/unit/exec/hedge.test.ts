// Hedged sends (src/exec/attempts/hedge.ts): no hedge while the first node answers within its
// delay; past it a second node is asked, the first good answer wins and the other
// attempt is cancelled; a first node outrun by the hedge is named so its breaker hears
// of it, a hedge outrun by the first node is nobody's failure; the per-second budget
// holds; and hedging off waits on the first node alone.

import { expect } from 'chai';
import { Hedger, SAVED_MIN, sendHedged, type Attempted } from '../../../src/exec/attempts/hedge.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodeFailure, type Cancel } from '../../../src/pool/failures.js';
import { pause, until } from '../../support/until.js';

const node = (name: string): PoolNode => ({ name, slowMs: undefined }) as unknown as PoolNode;
const A = node('a');
const B = node('b');

/** An attempt the test ends by hand, recording whether it was cancelled. */
class Pending {
  aborted = false;
  private end!: (a: Attempted<string>) => void;
  readonly promise: Promise<Attempted<string>>;
  constructor(readonly node: PoolNode) {
    this.promise = new Promise((resolve) => (this.end = resolve));
  }
  answer(text: string): void {
    this.end({ node: this.node, started: 0, sent: [{ answer: text, verdict: 'ok', sure: true }] as never });
  }
  fail(): void {
    this.end({ node: this.node, started: 0, err: new NodeFailure('status', 'HTTP 502') });
  }
}

class Events {
  sent = 0;
  won = 0;
  readonly events = { sent: () => void this.sent++, won: () => void this.won++ };
}

/** A frozen clock: the budget gets nothing from time, only its savings and each call's share. */
function hedger(events: Events, budgetPercent = 100, minPerSecond = 0): Hedger {
  return new Hedger({ minDelayMs: 1, maxDelayMs: 1, budgetPercent, minPerSecond }, events.events, () => 0);
}

/** Launches attempts on nodes the test holds, in order of launch. */
function launcher(): { launch: (n: PoolNode, c: Cancel | undefined) => Promise<Attempted<string>>; started: Pending[] } {
  const started: Pending[] = [];
  return {
    started,
    launch(n, cancel) {
      const p = new Pending(n);
      cancel?.bind({ cancel: () => (p.aborted = true) });
      started.push(p);
      return p.promise;
    },
  };
}

describe('hedged sends (src/exec/attempts/hedge.ts)', () => {
  it('asks no second node when the first answers within its delay', async () => {
    const ev = new Events();
    const l = launcher();
    const done = sendHedged(
      A,
      l.launch,
      hedger(ev),
      () => B,
      () => undefined,
    );
    l.started[0]?.answer('"a"');
    const r = await done;
    expect(r.won?.node).to.equal(A);
    expect(r.outrun).to.equal(undefined);
    expect(l.started).to.have.length(1);
    expect(ev).to.include({ sent: 0, won: 0 });
  });

  it('asks a second node past the delay; when it answers first, the first is cancelled and named as outrun', async () => {
    const ev = new Events();
    const l = launcher();
    const done = sendHedged(
      A,
      l.launch,
      hedger(ev),
      () => B,
      () => expect.fail('the outrun attempt is not handed to late'),
    );
    await until(() => l.started.length === 2);
    l.started[1]?.answer('"b"');
    const r = await done;
    expect(r.won?.node).to.equal(B);
    expect(r.outrun?.node).to.equal(A);
    expect(l.started[0]?.aborted).to.equal(true);
    expect(ev).to.include({ sent: 1, won: 1 });
    l.started[0]?.fail();
  });

  it('when the first answers after the hedge was sent, the hedge is cancelled and handed to late, and nobody is outrun', async () => {
    const ev = new Events();
    const l = launcher();
    const late: Array<Attempted<string>> = [];
    const done = sendHedged(
      A,
      l.launch,
      hedger(ev),
      () => B,
      (a) => late.push(a),
    );
    await until(() => l.started.length === 2);
    l.started[0]?.answer('"a"');
    const r = await done;
    expect(r.won?.node).to.equal(A);
    expect(r.outrun).to.equal(undefined);
    expect(l.started[1]?.aborted).to.equal(true);
    l.started[1]?.fail();
    await until(() => late.length === 1);
    expect(late[0]?.node).to.equal(B);
    expect(ev).to.include({ sent: 1, won: 0 });
  });

  it('uses the hedge when the first fails after it was sent, and reports the failure', async () => {
    const ev = new Events();
    const l = launcher();
    const done = sendHedged(
      A,
      l.launch,
      hedger(ev),
      () => B,
      () => undefined,
    );
    await until(() => l.started.length === 2);
    l.started[0]?.fail();
    l.started[1]?.answer('"b"');
    const r = await done;
    expect(r.won?.node).to.equal(B);
    expect(r.failed.map((a) => a.node)).to.deep.equal([A]);
    expect(r.outrun).to.equal(undefined);
    expect(ev).to.include({ sent: 1, won: 1 });
  });

  it('waits on the first node alone once the second’s budget is spent, or when no other node can take the call', async () => {
    const ev = new Events();
    // A floor alone, no share of calls, and a frozen clock: its savings but one spent already.
    const h = hedger(ev, 0, 1);
    for (let i = 0; i < SAVED_MIN - 1; i++) expect(h.take()).to.equal(true);
    const l1 = launcher();
    const one = sendHedged(
      A,
      l1.launch,
      h,
      () => B,
      () => undefined,
    );
    await until(() => l1.started.length === 2);
    l1.started[1]?.answer('"b"');
    await one;
    const l2 = launcher();
    const two = sendHedged(
      A,
      l2.launch,
      h,
      () => B,
      () => undefined,
    );
    const l3 = launcher();
    const three = sendHedged(
      A,
      l3.launch,
      hedger(new Events()),
      () => undefined,
      () => undefined,
    );
    // Twenty times the hedge delay: a hedge that was coming would have started.
    await pause(20);
    expect(l2.started).to.have.length(1);
    expect(l3.started).to.have.length(1);
    l2.started[0]?.answer('"a"');
    l3.started[0]?.answer('"a"');
    expect((await two).won?.node).to.equal(A);
    expect((await three).won?.node).to.equal(A);
    expect(ev).to.include({ sent: 1 });
  });

  it('never hedges when hedging is off (budgetPercent 0, minPerSecond 0)', async () => {
    const ev = new Events();
    const l = launcher();
    const done = sendHedged(
      A,
      l.launch,
      hedger(ev, 0, 0),
      () => B,
      () => undefined,
    );
    // Twenty times the hedge delay: a hedge that was coming would have started.
    await pause(20);
    expect(l.started).to.have.length(1);
    l.started[0]?.answer('"a"');
    expect((await done).won?.node).to.equal(A);
    expect(ev).to.include({ sent: 0 });
  });
});
