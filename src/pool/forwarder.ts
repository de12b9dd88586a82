// Sending routed calls to nodes and bringing back answers: JSON-RPC items (grouped so
// one node gets one body), or one passthrough request. Retries go to other nodes
// within the request's deadline; a pruned-state answer from a full node moves the
// call to an archive node; a chain's own error answer is relayed, never retried.
// Answers are relayed as the node sent them: item text is sliced, never re-serialised.

import { replyError } from '../jsonrpc/envelope.js';
import { isObjectText, memberRaw, splitArray } from '../jsonrpc/raw-json.js';
import type { Call, ChainHandler, Routing, UpstreamRequest, Verdict } from '../plugin.js';
import { Attempts } from './attempts.js';
import { NodeFailure, NodeThrottled, type PoolNode } from './pool-node.js';
import type { NodePool } from './pool.js';
import { UpstreamError, type UpstreamReply } from './upstream.js';
import type { GatewayError } from '../errors.js';

export type Outcome = 'ok' | 'chain-error' | 'pruned' | 'failure' | 'timeout' | 'throttled';

export interface ForwardObserver {
  upstream?(pool: NodePool, node: PoolNode, outcome: Outcome, seconds: number): void;
  /** A call moved to another node; reason is 'failure' | 'throttled' | 'pruned'. */
  retry?(pool: NodePool, reason: 'failure' | 'throttled' | 'pruned'): void;
}

export interface RoutedCall {
  readonly call: Call;
  readonly routing: Routing;
}

/** Filled in by the forwarder for the request log: who answered, after how many attempts. */
export interface ForwardTrace {
  node: string | undefined;
  attempts: number;
}

/** An item's answer: its raw JSON text, undefined for a notification, or a table error. */
export type ItemResult = string | undefined | GatewayError;

/** Where a call goes after a full node's pruned-state answer. */
export const ARCHIVE_FALLBACK: Routing = { archive: true, cost: 0, label: '' };

function toFailure(err: unknown): Error {
  if (err instanceof UpstreamError) return new NodeFailure(err.kind, err.message);
  return err as Error;
}

interface Group {
  readonly indices: number[];
  readonly routing: Routing;
}

/** Do all calls go to the same kind of node as the first (the usual batch)? */
function sameNodes(calls: readonly RoutedCall[]): boolean {
  const first = (calls[0] as RoutedCall).routing;
  for (const c of calls) if (c.routing.archive !== first.archive || c.routing.minHeight !== first.minHeight) return false;
  return true;
}

export class Forwarder {
  constructor(
    private readonly pool: NodePool,
    private readonly handler: ChainHandler,
    /** Public so other transports' relays (grpc/relay.ts) report attempts the same way. */
    readonly observer: ForwardObserver = {},
  ) {}

  private outcomeOf(err: unknown): Outcome {
    // EOPENBREAKER: another request took the half-open trial first; not this node's fault.
    if (err instanceof NodeThrottled || (err as { code?: string }).code === 'EOPENBREAKER') return 'throttled';
    if (err instanceof NodeFailure && err.reason === 'timeout') return 'timeout';
    return 'failure';
  }

  /** Book a failed attempt: back off a throttling node, count the rest, tell metrics. */
  attemptFailed(node: PoolNode, attempts: Attempts, err: unknown, started: number): void {
    const outcome = this.outcomeOf(err);
    if (outcome === 'throttled') node.throttle(Date.now());
    else attempts.failed(outcome === 'timeout');
    this.observer.upstream?.(this.pool, node, outcome, (performance.now() - started) / 1000);
    this.observer.retry?.(this.pool, outcome === 'throttled' ? 'throttled' : 'failure');
  }

  /** Answer every call, in order. Never throws: failures become table errors per item. */
  async jsonRpc(calls: readonly RoutedCall[], deadline: number, trace?: ForwardTrace): Promise<ItemResult[]> {
    const results = new Array<ItemResult>(calls.length);
    const attempts = new Attempts(this.pool, deadline);
    const first = calls[0] as RoutedCall;
    const queue: Group[] = [];
    if (sameNodes(calls)) queue.push({ indices: calls.map((_, i) => i), routing: first.routing });
    else {
      // Calls that need other nodes than the first go in groups of their own.
      const byKey = new Map<string, Group>();
      calls.forEach((c, i) => {
        const key = `${c.routing.archive ? 'a' : 'f'}${c.routing.minHeight ?? ''}`;
        let g = byKey.get(key);
        if (g === undefined) {
          g = { indices: [], routing: c.routing };
          byKey.set(key, g);
          queue.push(g);
        }
        g.indices.push(i);
      });
    }
    // Only calls a full node answered as pruned have one: made when the first does.
    let prunedFallback: Map<number, string> | undefined;
    while (queue.length > 0) {
      const group = queue.shift() as Group;
      const node = attempts.next(group.routing);
      if (node === undefined) {
        const err = attempts.error();
        for (const i of group.indices) results[i] = prunedFallback?.get(i) ?? err;
        continue;
      }
      const started = performance.now();
      try {
        const answers = await node.call(() => this.sendGroup(node, calls, group, attempts.timeoutFor()));
        node.observeLatency(performance.now() - started);
        if (trace !== undefined) trace.node = node.name;
        const pruned: number[] = [];
        let sawChainError = false;
        group.indices.forEach((idx, k) => {
          const a = answers[k] as { text: string | undefined; verdict: Verdict };
          if (a.verdict === 'pruned' && node.role === 'full') {
            pruned.push(idx);
            if (a.text !== undefined) (prunedFallback ??= new Map()).set(idx, a.text);
          } else {
            if (a.verdict === 'chain-error') sawChainError = true;
            results[idx] = a.text;
          }
        });
        this.observer.upstream?.(
          this.pool,
          node,
          pruned.length > 0 ? 'pruned' : sawChainError ? 'chain-error' : 'ok',
          (performance.now() - started) / 1000,
        );
        if (pruned.length > 0) {
          this.observer.retry?.(this.pool, 'pruned');
          queue.push({ indices: pruned, routing: ARCHIVE_FALLBACK });
        }
      } catch (err) {
        this.attemptFailed(node, attempts, err, started);
        queue.push(group);
      }
    }
    if (trace !== undefined) trace.attempts = attempts.count;
    return results;
  }

  /** One node, one body: the group's items, each answered with its text and verdict. */
  private async sendGroup(
    node: PoolNode,
    calls: readonly RoutedCall[],
    group: Group,
    timeoutMs: number,
  ): Promise<Array<{ text: string | undefined; verdict: Verdict }>> {
    const single = group.indices.length === 1;
    const body = single
      ? (calls[group.indices[0] as number] as RoutedCall).call.raw
      : `[${group.indices.map((i) => (calls[i] as RoutedCall).call.raw).join(',')}]`;
    let reply: UpstreamReply;
    try {
      reply = await node.upstream.postJson(body, timeoutMs);
    } catch (err) {
      throw toFailure(err);
    }
    if (reply.status === 429) throw new NodeThrottled();
    if (reply.status >= 500) throw new NodeFailure('status', `node answered HTTP ${reply.status}`);
    const texts = single ? this.singleText(reply, calls, group) : this.batchTexts(reply, calls, group);
    return group.indices.map((idx, k) => {
      const call = (calls[idx] as RoutedCall).call;
      const text = texts[k];
      if (text === undefined) return { text, verdict: 'ok' as const };
      const verdict = this.handler.judge(call, { status: reply.status, text, error: replyError(text) });
      if (verdict === 'node-failure') throw new NodeFailure('garbage', 'node answer judged a failure');
      if (verdict === 'throttled') throw new NodeThrottled();
      return { text, verdict };
    });
  }

  private singleText(reply: UpstreamReply, calls: readonly RoutedCall[], group: Group): Array<string | undefined> {
    const call = (calls[group.indices[0] as number] as RoutedCall).call;
    if (call.id === undefined) return [undefined];
    if (!isObjectText(reply.text)) throw new NodeFailure('garbage', 'node answer is not a JSON object');
    const id = memberRaw(reply.text, 'id');
    if (id !== call.id && !this.sameId(id, call.id)) throw new NodeFailure('garbage', 'node answered another call (wrong id)');
    return [reply.text];
  }

  /** Ids equal as JSON values (a node may re-serialise `1.0` as `1`), or one the plugin allows. */
  private sameId(got: string | undefined, sent: string): boolean {
    if (got === undefined) return false;
    if (this.handler.fixedReplyIds?.includes(got) === true) return true;
    try {
      return JSON.parse(got) === JSON.parse(sent);
    } catch {
      return false;
    }
  }

  private batchTexts(reply: UpstreamReply, calls: readonly RoutedCall[], group: Group): Array<string | undefined> {
    const items = splitArray(reply.text);
    if (items === undefined) throw new NodeFailure('garbage', 'node answer to a batch is not a JSON array');
    const wanted = group.indices.filter((i) => (calls[i] as RoutedCall).call.id !== undefined).length;
    if (items.length !== wanted) throw new NodeFailure('garbage', `node answered ${items.length} of ${wanted} batch items`);
    // Nodes answer in request order almost always: pair by position when every id agrees.
    const ids = items.map((item) => memberRaw(item, 'id') ?? 'null');
    let k = 0;
    let inOrder = true;
    for (const i of group.indices) {
      const id = (calls[i] as RoutedCall).call.id;
      if (id !== undefined && ids[k++] !== id) {
        inOrder = false;
        break;
      }
    }
    if (inOrder) {
      k = 0;
      return group.indices.map((i) => ((calls[i] as RoutedCall).call.id === undefined ? undefined : items[k++]));
    }
    const byId = new Map<string, string[]>();
    items.forEach((item, j) => {
      const id = ids[j] as string;
      const list = byId.get(id);
      if (list === undefined) byId.set(id, [item]);
      else list.push(item);
    });
    let positional = false;
    const out = group.indices.map((i) => {
      const id = (calls[i] as RoutedCall).call.id;
      if (id === undefined) return undefined;
      const found = byId.get(id)?.shift();
      if (found === undefined) positional = true;
      return found;
    });
    if (!positional) return out;
    // Some nodes answer with fixed ids (CometBFT's -1): pair answers by position.
    k = 0;
    return group.indices.map((i) => ((calls[i] as RoutedCall).call.id === undefined ? undefined : items[k++]));
  }

  /** One passthrough request; resolves with the node's answer or rejects with a table error. */
  async passthrough(
    call: Call,
    routing: Routing,
    upstream: UpstreamRequest,
    deadline: number,
    trace?: ForwardTrace,
  ): Promise<UpstreamReply> {
    const attempts = new Attempts(this.pool, deadline);
    try {
      return await this.passthroughAttempts(call, routing, upstream, attempts, trace);
    } finally {
      if (trace !== undefined) trace.attempts = attempts.count;
    }
  }

  private async passthroughAttempts(
    call: Call,
    routing: Routing,
    upstream: UpstreamRequest,
    attempts: Attempts,
    trace: ForwardTrace | undefined,
  ): Promise<UpstreamReply> {
    let route = routing;
    let prunedReply: UpstreamReply | undefined;
    for (;;) {
      const node = attempts.next(route);
      if (node === undefined) {
        // With no archive node left, a full node's pruned answer is the best answer there is.
        if (prunedReply !== undefined) return prunedReply;
        throw attempts.error();
      }
      const started = performance.now();
      try {
        const reply = await node.call(async () => {
          let r: UpstreamReply;
          try {
            r = (await node.upstream.send(
              upstream.method,
              upstream.path,
              upstream.headers ?? {},
              upstream.body,
              attempts.timeoutFor(),
            )) as UpstreamReply;
          } catch (err) {
            throw toFailure(err);
          }
          const verdict = this.handler.judge(call, { status: r.status, text: r.text });
          if (verdict === 'node-failure') throw new NodeFailure('garbage', `node answered HTTP ${r.status} unusably`);
          if (verdict === 'throttled') throw new NodeThrottled();
          return { reply: r, verdict };
        });
        node.observeLatency(performance.now() - started);
        if (trace !== undefined) trace.node = node.name;
        const seconds = (performance.now() - started) / 1000;
        if (reply.verdict === 'pruned' && node.role === 'full') {
          this.observer.upstream?.(this.pool, node, 'pruned', seconds);
          this.observer.retry?.(this.pool, 'pruned');
          prunedReply = reply.reply;
          route = ARCHIVE_FALLBACK;
          continue;
        }
        this.observer.upstream?.(this.pool, node, reply.verdict === 'chain-error' ? 'chain-error' : 'ok', seconds);
        return reply.reply;
      } catch (err) {
        this.attemptFailed(node, attempts, err, started);
      }
    }
  }
}
