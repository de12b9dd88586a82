// The one attempt loop (src/exec/attempts/attempts.ts) over real pools of real nodes on
// loopback: never the same node twice, at most maxAttempts, nothing after the
// deadline, 503/504/502 as the error table says, throttled nodes backed off without
// opening their breakers, pruned answers moved to archive only for keys that may read
// it, `retry: 'never'` calls never sent twice once they may have reached a node,
// batches grouped by the kind of node they need, and a stream that fails after its
// answer began counted against its node.

import { expect } from 'chai';
import { GatewayError, isGatewayError } from '../../../src/errors.js';
import { forward, type CallResult, type ForwardOptions } from '../../../src/exec/attempts/attempts.js';
import { Hedger } from '../../../src/exec/attempts/hedge.js';
import type { Exchange, ForwardObserver, RetryReason, Sent } from '../../../src/exec/exchanges/exchange.js';
import type { UpstreamOutcome } from '../../../src/exec/outcome.js';
import { JsonRpcExchange } from '../../../src/exec/exchanges/jsonrpc-exchange.js';
import { DEFAULT_JSONRPC_LIMITS, isJsonRpcCall, withParams } from '../../../src/jsonrpc/envelope.js';
import type { Call, JsonRpcCall, JsonRpcCodec, Routing } from '../../../src/plugin/contract.js';
import { CallAborted, NodeFailure } from '../../../src/pool/failures.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { DEFAULT_UPSTREAM_OPTIONS } from '../../../src/pool/upstream.js';
import { chainConfig, item, scriptedPlugin, type NodeSpec } from '../../support/chain.js';
import { echoNode, jsonRpcHandler, refusingUrl, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { until } from '../../support/until.js';

const PLAIN: Routing = { archive: false, cost: 1, label: 'm' };
const ARCHIVE: Routing = { archive: true, cost: 1, label: 'm' };
const NEVER: Routing = { archive: false, cost: 1, label: 'm', retry: 'never' };
const STRICT_BREAKER = '    breaker: { volumeThreshold: 1, errorThresholdPercentage: 1, resetTimeoutMs: 60000 }';

const codec = scriptedPlugin().create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS }).jsonrpc as JsonRpcCodec<undefined>;
const exchange = new JsonRpcExchange(codec);

function calls(...items: string[]): JsonRpcCall[] {
  const body = items.length === 1 ? (items[0] as string) : `[${items.join(',')}]`;
  return codec.parse(body).items.filter((i): i is JsonRpcCall<undefined> => i.kind === 'jsonrpc');
}

function text(r: CallResult<string> | undefined): string {
  if (r === undefined || isGatewayError(r)) throw new Error(`expected an answer, got ${r === undefined ? 'nothing' : r.code}`);
  return r.answer as string;
}

function failed(r: CallResult<string> | undefined): GatewayError {
  if (r === undefined || !isGatewayError(r)) throw new Error(`expected a gateway error, got ${JSON.stringify(r)}`);
  return r;
}

/** What the loop reported, for metrics. */
class Observed implements ForwardObserver {
  readonly upstreams: Array<[string, UpstreamOutcome]> = [];
  readonly retries: RetryReason[] = [];
  upstream(node: PoolNode, outcome: UpstreamOutcome): void {
    this.upstreams.push([node.name, outcome]);
  }
  retry(reason: RetryReason): void {
    this.retries.push(reason);
  }
}

/** A test's clock: starts at the real time (undici and breakers keep their own), moved by hand. */
class Clock {
  t = Date.now();
  readonly now = (): number => this.t;
}

/** An exchange whose sends the test scripts, recording which node got which calls. */
class ScriptedExchange implements Exchange<JsonRpcCall, string> {
  readonly sends: Array<{ node: string; calls: number; timeoutMs: number }> = [];
  constructor(
    readonly batches: boolean,
    private readonly script: (node: PoolNode, calls: readonly JsonRpcCall[]) => Promise<Array<Sent<string>>>,
  ) {}
  send(node: PoolNode, c: readonly JsonRpcCall[], timeoutMs: number): Promise<Array<Sent<string>>> {
    this.sends.push({ node: node.name, calls: c.length, timeoutMs });
    return this.script(node, c);
  }
}

describe('attempt loop (src/exec/attempts/attempts.ts)', () => {
  const nodes: RpcNode[] = [];
  const pools: NodePool[] = [];
  let clock: Clock;
  let observed: Observed;

  async function node(handler = echoNode('n')): Promise<RpcNode> {
    const n = await startRpcNode(handler);
    nodes.push(n);
    return n;
  }

  async function pool(specs: readonly NodeSpec[], extra = ''): Promise<NodePool> {
    const p = new NodePool(await chainConfig(specs, extra), {}, DEFAULT_UPSTREAM_OPTIONS, undefined, clock.now);
    pools.push(p);
    return p;
  }

  const options = (over: Partial<ForwardOptions> = {}): ForwardOptions => ({
    deadline: clock.t + 5_000,
    observer: observed,
    archiveAllowed: true,
    now: clock.now,
    ...over,
  });

  const failing = (status: number) => () => ({ status, body: '{"error":"down"}' });

  beforeEach(() => {
    clock = new Clock();
    observed = new Observed();
  });

  afterEach(async () => {
    for (const p of pools.splice(0)) await p.close();
    for (const n of nodes.splice(0)) await n.close();
  });

  describe('node choice and the error table', () => {
    it('tries each node once at most, up to maxAttempts, and answers 502 when every node failed', async () => {
      const [a, b, c] = [await node(failing(500)), await node(failing(500)), await node(failing(500))];
      const p = await pool(
        [
          { name: 'a', url: a.url, role: 'full' },
          { name: 'b', url: b.url, role: 'full' },
          { name: 'c', url: c.url, role: 'full' },
        ],
        '    maxAttempts: 10',
      );
      const trace = { node: undefined, attempts: 0 };
      const [r] = await forward(p, exchange, calls(item('1', 'm')), [PLAIN], options({ trace }));
      expect(failed(r)).to.include({ code: 'UPSTREAM_FAILED', status: 502 });
      expect([a, b, c].map((n) => n.received.length)).to.deep.equal([1, 1, 1]);
      expect(trace.attempts).to.equal(3);
      expect(observed.upstreams.map(([, o]) => o)).to.deep.equal(['failure', 'failure', 'failure']);
    });

    it('stops at maxAttempts', async () => {
      const list = [await node(failing(500)), await node(failing(500)), await node(failing(500))];
      const p = await pool(
        list.map((n, i) => ({ name: `n${i}`, url: n.url, role: 'full' as const })),
        '    maxAttempts: 2',
      );
      const [r] = await forward(p, exchange, calls(item('1', 'm')), [PLAIN], options());
      expect(failed(r).code).to.equal('UPSTREAM_FAILED');
      expect(list.reduce((s, n) => s + n.received.length, 0)).to.equal(2);
    });

    it('moves a failed call to another node and answers from it', async () => {
      const bad = await node(failing(502));
      const good = await node(echoNode('good'));
      const p = await pool([
        { name: 'bad', url: bad.url, role: 'full' },
        { name: 'good', url: good.url, role: 'full' },
      ]);
      const trace = { node: undefined as string | undefined, attempts: 0 };
      const [r] = await forward(p, exchange, calls(item('"x"', 'm')), [PLAIN], options({ trace }));
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":"x","result":"good:m"}');
      expect(trace).to.deep.equal({ node: 'good', attempts: 2 });
      expect(observed.upstreams).to.deep.equal([
        ['bad', 'failure'],
        ['good', 'ok'],
      ]);
      expect(observed.retries).to.deep.equal(['failure']);
    });

    it('answers a lone call on a healthy node with one node call, naming the node, and leaves it idle', async () => {
      const only = await node(echoNode('only'));
      const p = await pool([{ name: 'only', url: only.url, role: 'full' }]);
      const answeredBy: PoolNode[] = [];
      const nodeCalls: number[] = [];
      const trace = { node: undefined as string | undefined, attempts: 0 };
      const [r] = await forward(p, exchange, calls(item('7', 'm')), [PLAIN], options({ answeredBy, nodeCalls, trace }));
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":7,"result":"only:m"}');
      expect(r).to.not.include({ sure: false });
      expect(answeredBy.map((n) => n.name)).to.deep.equal(['only']);
      expect(nodeCalls).to.deep.equal([1]);
      expect(trace).to.deep.equal({ node: 'only', attempts: 1 });
      expect(observed.upstreams).to.deep.equal([['only', 'ok']]);
      expect(p.nodes.map((n) => n.inFlight)).to.deep.equal([0]);
    });

    it('hedges a lone call whose node outlives its delay: the hedge answers, the first is cancelled and named as outrun', async () => {
      const slowNode = await node(echoNode('slow'));
      const fastNode = await node(echoNode('fast'));
      const p = await pool([
        { name: 'slow', url: slowNode.url, role: 'full' },
        { name: 'fast', url: fastNode.url, role: 'full' },
      ]);
      let cancelled = 0;
      const held: Exchange<JsonRpcCall, string> = {
        batches: true,
        send(n, c, timeoutMs, cancel) {
          if (n.name === 'fast') return exchange.send(n, c, timeoutMs, cancel);
          return new Promise((_resolve, reject) =>
            cancel?.bind({
              cancel: () => {
                cancelled++;
                reject(new CallAborted());
              },
            }),
          );
        },
      };
      const hedger = new Hedger(
        { minDelayMs: 1, maxDelayMs: 1, budgetPercent: 100, minPerSecond: 0 },
        { sent: () => undefined, won: () => undefined },
        clock.now,
      );
      const nodeCalls: number[] = [];
      const trace = { node: undefined as string | undefined, attempts: 0 };
      const [r] = await forward(p, held, calls(item('3', 'm')), [{ ...PLAIN, hedge: true }], options({ hedger, nodeCalls, trace }));
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":3,"result":"fast:m"}');
      expect(cancelled).to.equal(1);
      expect(nodeCalls).to.deep.equal([2]);
      expect(trace).to.deep.equal({ node: 'fast', attempts: 2 });
      expect(observed.upstreams).to.deep.equal([
        ['slow', 'timeout'],
        ['fast', 'ok'],
      ]);
      expect(p.nodes.map((n) => n.inFlight)).to.deep.equal([0, 0]);
    });

    it('leaves no node busy after a lone call failed on one and moved to another', async () => {
      const bad = await node(failing(502));
      const good = await node(echoNode('good'));
      const p = await pool([
        { name: 'bad', url: bad.url, role: 'full' },
        { name: 'good', url: good.url, role: 'full' },
      ]);
      const nodeCalls: number[] = [];
      const [r] = await forward(p, exchange, calls(item('"x"', 'm')), [PLAIN], options({ nodeCalls }));
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":"x","result":"good:m"}');
      expect(nodeCalls).to.deep.equal([2]);
      expect(p.nodes.map((n) => n.inFlight)).to.deep.equal([0, 0]);
    });

    it('answers 503 with Retry-After when no node may take the call, asking none', async () => {
      const a = await node();
      const p = await pool([{ name: 'a', url: a.url, role: 'full' }]);
      (p.nodes[0] as PoolNode).inRotation = false;
      const trace = { node: undefined, attempts: 0 };
      const [r] = await forward(p, exchange, calls(item('1', 'm')), [PLAIN], options({ trace }));
      expect(failed(r)).to.include({ code: 'NO_HEALTHY_NODE', status: 503 });
      expect(failed(r).headers).to.deep.equal({ 'retry-after': '1' });
      expect(a.received).to.have.length(0);
      expect(trace.attempts).to.equal(0);
    });

    it('answers 504 when every attempt timed out', async () => {
      const [a, b] = [await node(), await node()];
      const p = await pool([
        { name: 'a', url: a.url, role: 'full' },
        { name: 'b', url: b.url, role: 'full' },
      ]);
      // A hanging node's timeout is undici's (test/integration/pools.test.ts hangs real nodes).
      const x = new ScriptedExchange(false, () => Promise.reject(new NodeFailure('timeout', 'scripted')));
      const [r] = await forward(p, x, calls(item('1', 'm')), [PLAIN], options());
      expect(failed(r)).to.include({ code: 'UPSTREAM_TIMEOUT', status: 504 });
      expect(observed.upstreams).to.deep.equal([
        ['a', 'timeout'],
        ['b', 'timeout'],
      ]);
    });

    it('answers 502 when attempts timed out and failed, and 504 once the deadline passed on a timeout', async () => {
      const [a, b] = [await node(), await node()];
      const p = await pool([
        { name: 'a', url: a.url, role: 'full' },
        { name: 'b', url: b.url, role: 'full' },
      ]);
      let n = 0;
      const mixed = new ScriptedExchange(false, () => {
        n++;
        return Promise.reject(new NodeFailure(n === 1 ? 'timeout' : 'status', 'scripted'));
      });
      expect(failed((await forward(p, mixed, calls(item('1', 'm')), [PLAIN], options()))[0]).code).to.equal('UPSTREAM_FAILED');
      const late = new ScriptedExchange(false, () => {
        clock.t += 10_000;
        return Promise.reject(new NodeFailure('timeout', 'scripted'));
      });
      expect(failed((await forward(p, late, calls(item('1', 'm')), [PLAIN], options()))[0]).code).to.equal('UPSTREAM_TIMEOUT');
    });

    it('sends nothing after the deadline, and bounds each attempt by the time left', async () => {
      const [a, b] = [await node(), await node()];
      const p = await pool([
        { name: 'a', url: a.url, role: 'full' },
        { name: 'b', url: b.url, role: 'full' },
      ]);
      const x = new ScriptedExchange(false, () => {
        clock.t += 300;
        return Promise.reject(new NodeFailure('status', 'scripted'));
      });
      const [r] = await forward(p, x, calls(item('1', 'm')), [PLAIN], options({ deadline: clock.t + 300 }));
      expect(failed(r).code).to.equal('UPSTREAM_FAILED');
      // attemptTimeoutMs is 10 s by default: the deadline is nearer.
      expect(x.sends).to.deep.equal([{ node: 'a', calls: 1, timeoutMs: 300 }]);
    });

    it('never tries the node a call is told to avoid', async () => {
      const [a, b] = [await node(echoNode('a')), await node(echoNode('b'))];
      const p = await pool([
        { name: 'a', url: a.url, role: 'full' },
        { name: 'b', url: b.url, role: 'full' },
      ]);
      for (let i = 0; i < 3; i++) {
        const [r] = await forward(p, exchange, calls(item('1', 'm')), [PLAIN], options({ avoid: p.nodes[0] }));
        expect(text(r)).to.contain('b:m');
      }
      expect(a.received).to.have.length(0);
    });

    it('gives a call the client left an error of its own, trying no other node and blaming none', async () => {
      const [a, b] = [await node(), await node()];
      const p = await pool(
        [
          { name: 'a', url: a.url, role: 'full' },
          { name: 'b', url: b.url, role: 'full' },
        ],
        STRICT_BREAKER,
      );
      const x = new ScriptedExchange(false, () => Promise.reject(new CallAborted()));
      const [r] = await forward(p, x, calls(item('1', 'm')), [PLAIN], options());
      expect(failed(r)).to.include({ code: 'UPSTREAM_TIMEOUT', message: 'The call was cancelled' });
      expect(x.sends).to.have.length(1);
      expect((p.nodes[0] as PoolNode).breakerState).to.equal('closed');
    });
  });

  describe('throttling and breakers', () => {
    it('backs off from a node that answered 429 for a while without opening its breaker; a 5xx opens it', async () => {
      const [busy, good] = [await node(failing(429)), await node(echoNode('good'))];
      const p = await pool(
        [
          { name: 'busy', url: busy.url, role: 'full' },
          { name: 'good', url: good.url, role: 'full' },
        ],
        STRICT_BREAKER,
      );
      const [b, g] = p.nodes as [PoolNode, PoolNode];
      const [r] = await forward(p, exchange, calls(item('1', 'm')), [PLAIN], options());
      expect(text(r)).to.contain('good:m');
      expect(observed.upstreams).to.deep.equal([
        ['busy', 'throttled'],
        ['good', 'ok'],
      ]);
      expect(observed.retries).to.deep.equal(['throttled']);
      expect(b.breakerState).to.equal('closed');
      expect(b.available(clock.t)).to.equal(false);
      expect(p.select(PLAIN, new Set([g]))).to.equal(undefined);
      // The back-off passes with time.
      clock.t += 1_000;
      expect(p.select(PLAIN, new Set([g]))).to.equal(b);

      busy.handler = failing(500);
      // A 5xx no other node was asked about may be the request's own doing: held, not counted.
      await forward(p, exchange, calls(item('2', 'm')), [PLAIN], options({ avoid: g }));
      expect(b.breakerState).to.equal('closed');
      // Once another node answers the same call, the 5xx was the node's own: its breaker opens.
      for (let i = 3; i < 6 && b.breakerState !== 'open'; i++) await forward(p, exchange, calls(item(String(i), 'm')), [PLAIN], options());
      expect(b.breakerState).to.equal('open');
    });

    it('counts a stream that failed after its answer began against its node, once it settles', async () => {
      const a = await node();
      const p = await pool([{ name: 'a', url: a.url, role: 'full' }], STRICT_BREAKER);
      let end: (o: UpstreamOutcome) => void = () => undefined;
      const settled = new Promise<UpstreamOutcome>((resolve) => {
        end = resolve;
      });
      const x = new ScriptedExchange(false, () => Promise.resolve([{ answer: 'streaming', verdict: 'ok', sure: true, settled }]));
      const [r] = await forward(p, x, calls(item('1', 'm')), [PLAIN], options());
      expect(text(r)).to.equal('streaming');
      const n = p.nodes[0] as PoolNode;
      // Nothing is counted before the stream ends.
      expect(observed.upstreams).to.deep.equal([]);
      expect(n.breakerState).to.equal('closed');
      end('failure');
      await until(() => n.breakerState === 'open', { what: 'the breaker hears of the failure' });
      expect(observed.upstreams).to.deep.equal([['a', 'failure']]);
    });

    it('counts a stream that ended well as the node answering', async () => {
      const a = await node();
      const p = await pool([{ name: 'a', url: a.url, role: 'full' }], STRICT_BREAKER);
      const x = new ScriptedExchange(false, () =>
        Promise.resolve([{ answer: 'streamed', verdict: 'ok', sure: true, settled: Promise.resolve('ok' as const) }]),
      );
      await forward(p, x, calls(item('1', 'm')), [PLAIN], options());
      await until(() => observed.upstreams.length === 1, { what: 'the stream is counted' });
      expect(observed.upstreams).to.deep.equal([['a', 'ok']]);
      expect((p.nodes[0] as PoolNode).breakerState).to.equal('closed');
    });
  });

  describe('pruned state', () => {
    const PRUNED_ANSWER = (_m: string, _p: unknown, id: string) => ({
      raw: `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"message":"missing trie node 0badc0de"}}`,
    });
    let full: RpcNode;
    let archive: RpcNode;
    let p: NodePool;

    beforeEach(async () => {
      full = await node(jsonRpcHandler((m, params, id) => (m === 'm_state' ? PRUNED_ANSWER(m, params, id) : { result: `full:${m}` })));
      archive = await node(echoNode('archive'));
      p = await pool([
        { name: 'full', url: full.url, role: 'full' },
        { name: 'archive', url: archive.url, role: 'archive' },
      ]);
    });

    it('moves a full node’s pruned answer to an archive node for a key that may read archive state', async () => {
      const results = await forward(p, exchange, calls(item('1', 'm_state'), item('2', 'm_plain')), [PLAIN, PLAIN], options());
      expect(results.map(text)).to.deep.equal([
        '{"jsonrpc":"2.0","id":1,"result":"archive:m_state"}',
        '{"jsonrpc":"2.0","id":2,"result":"full:m_plain"}',
      ]);
      expect(archive.methods()).to.deep.equal(['m_state']);
      expect(observed.upstreams).to.deep.equal([
        ['full', 'pruned'],
        ['archive', 'ok'],
      ]);
      expect(observed.retries).to.deep.equal(['pruned']);
    });

    it('moves a lone call’s pruned answer on as well, counting both node calls and leaving neither node busy', async () => {
      const answeredBy: PoolNode[] = [];
      const nodeCalls: number[] = [];
      const trace = { node: undefined as string | undefined, attempts: 0 };
      const [r] = await forward(p, exchange, calls(item('1', 'm_state')), [PLAIN], options({ answeredBy, nodeCalls, trace }));
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":1,"result":"archive:m_state"}');
      expect(r).to.include({ sure: false });
      expect(answeredBy.map((n) => n.name)).to.deep.equal(['archive']);
      expect(nodeCalls).to.deep.equal([2]);
      expect(trace).to.deep.equal({ node: 'archive', attempts: 2 });
      expect(p.nodes.map((n) => n.inFlight)).to.deep.equal([0, 0]);
    });

    it('refuses it with 403 for a key without archive access, never asking an archive node', async () => {
      const results = await forward(
        p,
        exchange,
        calls(item('1', 'm_state'), item('2', 'm_plain')),
        [PLAIN, PLAIN],
        options({ archiveAllowed: false }),
      );
      expect(failed(results[0])).to.include({ code: 'FORBIDDEN', status: 403 });
      expect(failed(results[0]).message).to.match(/no archive access/);
      expect(text(results[1])).to.contain('full:m_plain');
      expect(archive.received).to.have.length(0);
    });

    it('gives the pruned answer itself when no archive node can answer', async () => {
      await archive.close();
      const [r] = await forward(p, exchange, calls(item('1', 'm_state')), [PLAIN], options());
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"missing trie node 0badc0de"}}');
      expect((r as Sent<string>).verdict).to.equal('pruned');
    });

    it('takes an archive node’s pruned answer as the answer', async () => {
      archive.handler = jsonRpcHandler(PRUNED_ANSWER);
      const [r] = await forward(p, exchange, calls(item('1', 'm_state')), [ARCHIVE], options());
      expect(text(r)).to.contain('missing trie node');
      expect(full.received).to.have.length(0);
      expect(observed.retries).to.deep.equal([]);
    });
  });

  describe('calls at the latest state', () => {
    // The scripted plugin's words for state a node lacks (geth says "header not found" of a block it has not reached).
    const HEADER_NOT_FOUND = (_m: string, _p: unknown, id: string) => ({
      raw: `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"message":"missing trie node"}}`,
    });
    // Pinned as the EVM plugin pins a read at `latest`: the height in the first param.
    const LATEST: Routing = {
      archive: false,
      cost: 1,
      label: 'm',
      latest: {
        pin: <C extends Call>(call: C, h: number): C => (isJsonRpcCall(call) ? withParams(call, [`0x${h.toString(16)}`]) : call),
      },
    };
    let ahead: RpcNode;
    let behind: RpcNode;
    let archive: RpcNode;
    let p: NodePool;
    const named = (name: string): PoolNode => p.nodes.find((n) => n.name === name) as PoolNode;

    beforeEach(async () => {
      ahead = await node(echoNode('ahead'));
      behind = await node(jsonRpcHandler((m, params) => ({ result: `behind:${m}:${JSON.stringify(params)}` })));
      archive = await node(echoNode('archive'));
      p = await pool([
        { name: 'ahead', url: ahead.url, role: 'full' },
        { name: 'behind', url: behind.url, role: 'full' },
        { name: 'archive', url: archive.url, role: 'archive' },
      ]);
      named('ahead').head = 11;
      named('behind').head = 10;
      named('archive').head = 10;
    });

    it('go only to a node at the served head while one can take them, as they were sent', async () => {
      for (let i = 0; i < 4; i++) {
        const [r] = await forward(p, exchange, calls(item(String(i), 'm_read', ['latest'])), [LATEST], options({ atHead: 11 }));
        expect(text(r)).to.contain('ahead:m_read');
      }
      expect(behind.received).to.have.length(0);
    });

    it('go to a node below it, pinned to it, when the node at it fails', async () => {
      await ahead.close();
      const [r] = await forward(p, exchange, calls(item('1', 'm_read', ['latest'])), [LATEST], options({ atHead: 11 }));
      expect(text(r)).to.equal('{"jsonrpc":"2.0","id":1,"result":"behind:m_read:[\\"0xb\\"]"}');
      expect(observed.upstreams).to.deep.equal([
        ['ahead', 'failure'],
        ['behind', 'ok'],
      ]);
    });

    it('move on from a node that lacks the block: never to archive state, never refused for want of archive access', async () => {
      await ahead.close();
      behind.handler = jsonRpcHandler(HEADER_NOT_FOUND);
      archive.handler = jsonRpcHandler(HEADER_NOT_FOUND);
      const [withArchive] = await forward(p, exchange, calls(item('1', 'm_read', ['latest'])), [LATEST], options({ atHead: 11 }));
      // The archive node is the last resort of a call full nodes answer, asked at the served head too.
      expect(failed(withArchive)).to.include({ code: 'UPSTREAM_FAILED', status: 502 });
      expect(archive.received).to.have.length(1);
      expect(archive.received[0]?.body).to.contain('"0xb"');
      expect(observed.retries).to.deep.equal(['failure', 'pruned', 'pruned']);
      const [without] = await forward(
        p,
        exchange,
        calls(item('2', 'm_read', ['latest'])),
        [LATEST],
        options({ atHead: 11, archiveAllowed: false }),
      );
      expect(failed(without)).to.include({ code: 'UPSTREAM_FAILED', status: 502 });
      expect(archive.received).to.have.length(1);
    });

    it('answer 503 when the only nodes that can take them lack the block', async () => {
      const q = await pool([{ name: 'behind', url: behind.url, role: 'full' }]);
      (q.nodes[0] as PoolNode).head = 10;
      behind.handler = jsonRpcHandler(HEADER_NOT_FOUND);
      const [r] = await forward(
        q,
        exchange,
        calls(item('1', 'm_read', ['latest'])),
        [LATEST],
        options({ atHead: 11, archiveAllowed: false }),
      );
      expect(failed(r)).to.include({ code: 'NO_HEALTHY_NODE', status: 503 });
      expect(observed.upstreams).to.deep.equal([['behind', 'pruned']]);
    });
  });

  describe("retry: 'never'", () => {
    let first: RpcNode;
    let second: RpcNode;

    async function pair(firstUrl?: string): Promise<NodePool> {
      return pool([
        { name: 'first', url: firstUrl ?? first.url, role: 'full' },
        { name: 'second', url: second.url, role: 'full' },
      ]);
    }

    beforeEach(async () => {
      first = await node(failing(500));
      second = await node(echoNode('second'));
    });

    it('never sends a call twice once it may have reached a node', async () => {
      const p = await pair();
      const [r] = await forward(p, exchange, calls(item('1', 'm_send')), [NEVER], options());
      expect(failed(r).code).to.equal('UPSTREAM_FAILED');
      expect(first.received).to.have.length(1);
      expect(second.received).to.have.length(0);
      // The same failure moves an ordinary call on.
      const [safe] = await forward(p, exchange, calls(item('2', 'm_read')), [PLAIN], options({ avoid: undefined }));
      expect(text(safe)).to.contain('second:m_read');
    });

    it('never sends it again after a timeout either', async () => {
      const p = await pair();
      const x = new ScriptedExchange(false, () => Promise.reject(new NodeFailure('timeout', 'scripted')));
      const [r] = await forward(p, x, calls(item('1', 'm_send')), [NEVER], options());
      expect(failed(r).code).to.equal('UPSTREAM_TIMEOUT');
      expect(x.sends.map((s) => s.node)).to.deep.equal(['first']);
    });

    it('goes on to another node when the first refused the connection, or answered 429', async () => {
      const p = await pair(await refusingUrl());
      const [r] = await forward(p, exchange, calls(item('1', 'm_send')), [NEVER], options());
      expect(text(r)).to.contain('second:m_send');
      expect(observed.upstreams).to.deep.equal([
        ['first', 'failure'],
        ['second', 'ok'],
      ]);

      first.handler = failing(429);
      const q = await pair();
      const [t] = await forward(q, exchange, calls(item('2', 'm_send')), [NEVER], options());
      expect(text(t)).to.contain('second:m_send');
      expect(first.received).to.have.length(1);
    });
  });

  describe('batching', () => {
    it('sends the calls of a batch to each kind of node they need in one request each, answering in order', async () => {
      const full = await node(echoNode('full'));
      const archive = await node(echoNode('archive'));
      const p = await pool([
        { name: 'full', url: full.url, role: 'full' },
        { name: 'archive', url: archive.url, role: 'archive' },
      ]);
      const results = await forward(
        p,
        exchange,
        calls(item('"a"', 'm0'), item('"b"', 'm1'), item('"c"', 'm2'), item('"d"', 'm3')),
        [PLAIN, ARCHIVE, PLAIN, ARCHIVE],
        options(),
      );
      expect(results.map(text)).to.deep.equal([
        '{"jsonrpc":"2.0","id":"a","result":"full:m0"}',
        '{"jsonrpc":"2.0","id":"b","result":"archive:m1"}',
        '{"jsonrpc":"2.0","id":"c","result":"full:m2"}',
        '{"jsonrpc":"2.0","id":"d","result":"archive:m3"}',
      ]);
      expect(full.bodies()).to.deep.equal(['[{"jsonrpc":"2.0","id":0,"method":"m0"},{"jsonrpc":"2.0","id":1,"method":"m2"}]']);
      expect(archive.bodies()).to.deep.equal(['[{"jsonrpc":"2.0","id":0,"method":"m1"},{"jsonrpc":"2.0","id":1,"method":"m3"}]']);
    });

    it('keeps calls that must not be sent twice apart from the rest, and sends each call alone for exchanges that do not batch', async () => {
      const full = await node(echoNode('full'));
      const p = await pool([{ name: 'full', url: full.url, role: 'full' }]);
      const mixed = await forward(
        p,
        exchange,
        calls(item('1', 'm0'), item('2', 'm_send'), item('3', 'm2')),
        [PLAIN, NEVER, PLAIN],
        options(),
      );
      expect(mixed.map(text)).to.deep.equal([
        '{"jsonrpc":"2.0","id":1,"result":"full:m0"}',
        '{"jsonrpc":"2.0","id":2,"result":"full:m_send"}',
        '{"jsonrpc":"2.0","id":3,"result":"full:m2"}',
      ]);
      expect(full.bodies()).to.deep.equal([
        '[{"jsonrpc":"2.0","id":0,"method":"m0"},{"jsonrpc":"2.0","id":1,"method":"m2"}]',
        '{"jsonrpc":"2.0","id":2,"method":"m_send"}',
      ]);
      const single = new ScriptedExchange(false, (_n, c) =>
        Promise.resolve(c.map((call) => ({ answer: call.method, verdict: 'ok' as const, sure: true }))),
      );
      const results = await forward(p, single, calls(item('1', 'm0'), item('2', 'm1')), [PLAIN, PLAIN], options());
      expect(results.map(text)).to.deep.equal(['m0', 'm1']);
      expect(single.sends.map((s) => s.calls)).to.deep.equal([1, 1]);
    });
  });

  it('never throws: an exchange that throws something unexpected counts as the node failing', async () => {
    const a = await node();
    const p = await pool([{ name: 'a', url: a.url, role: 'full' }]);
    const x = new ScriptedExchange(false, () => Promise.reject(new GatewayError('UPSTREAM_FAILED')));
    const [r] = await forward(p, x, calls(item('1', 'm')), [PLAIN], options());
    expect(failed(r).code).to.equal('UPSTREAM_FAILED');
  });
});
