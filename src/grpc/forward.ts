// One call's attempts on the nodes of its pool, and the relay of the answer that wins:
// nodes in turn (breakers, rotation, never the same node twice) while nothing has
// reached the client; then the answer streams through as the node sends it, with
// backpressure both ways, and its trailers last. The deadline and a client's cancel
// stop everything, the node's call included.

import { constants, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { ChainRuntime } from '../chain-runtime.js';
import { GatewayError } from '../errors.js';
import type { Call, ChainHandler, Routing, Verdict } from '../plugin.js';
import { Attempts } from '../pool/attempts.js';
import { ARCHIVE_FALLBACK } from '../pool/forwarder.js';
import { CallAborted, type StartedCall } from '../pool/grpc-client.js';
import { NodeFailure, NodeThrottled, type PoolNode } from '../pool/pool-node.js';
import { outcomeOf, type RequestOutcome } from '../calls/request-record.js';
import { MessageScanner } from './frames.js';
import type { GrpcRelayDeps } from './relay.js';
import { formatGrpcTimeout, grpcCodeName, GRPC_DEADLINE_EXCEEDED, refuse, statusOf, statusTrailers } from './status.js';

/** Answer headers and trailers not relayed to the client. */
const NOT_RELAYED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'server']);
function relayable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.charCodeAt(0) === 58 || NOT_RELAYED.has(k) || v === undefined) continue;
    out[k] = v;
  }
  return out;
}

/** One call's attempts on nodes and the relay of the answer that wins. */
export class Forward {
  private readonly attempts: Attempts;
  private readonly abort = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private gone = false;

  constructor(
    private readonly client: ServerHttp2Stream,
    private readonly chain: ChainRuntime,
    private readonly handler: Required<Pick<ChainHandler, 'judgeGrpc'>>,
    private readonly call: Call,
    private readonly routing: Routing,
    private readonly body: Buffer,
    private readonly metadata: OutgoingHttpHeaders,
    deadline: number,
    private readonly deps: GrpcRelayDeps,
    private readonly result: RequestOutcome,
  ) {
    this.attempts = new Attempts(chain.pool, deadline);
    this.timer = setTimeout(() => this.abort.abort(), Math.max(1, deadline - Date.now()));
    // A client that cancels (RST_STREAM) or drops the connection: stop, and cancel the node's call.
    client.once('close', () => {
      if (client.rstCode !== constants.NGHTTP2_NO_ERROR || !client.writableFinished) {
        this.gone = true;
        this.abort.abort();
      }
    });
  }

  async run(rate: Record<string, string> | undefined): Promise<number> {
    try {
      return await this.attemptAll(rate);
    } finally {
      clearTimeout(this.timer);
      this.result.attempts = this.attempts.count;
    }
  }

  private cancelled(): number {
    this.result.outcome = 'cancelled';
    return 1;
  }

  private refuse(e: GatewayError): number {
    this.result.outcome = outcomeOf(e);
    refuse(this.client, e);
    return e.grpcCode;
  }

  private async attemptAll(rate: Record<string, string> | undefined): Promise<number> {
    const { chain, attempts } = this;
    const observer = chain.forwarder.observer;
    let route = this.routing;
    let pruned: StartedCall | undefined;
    for (;;) {
      if (this.gone) return this.cancelled();
      const node = attempts.next(route);
      if (node === undefined) {
        // With no archive node left, a full node's pruned answer is the best answer there is.
        if (pruned !== undefined) return this.answerEnded(pruned, 'chain-error', rate);
        return this.refuse(this.abort.signal.aborted ? new GatewayError('UPSTREAM_TIMEOUT') : attempts.error());
      }
      const started = performance.now();
      let answer: { call: StartedCall; verdict: Verdict } | undefined;
      try {
        answer = await node.call(() => this.attempt(node));
      } catch (err) {
        chain.forwarder.attemptFailed(node, attempts, err, started);
        continue;
      }
      if (answer === undefined) return this.cancelled();
      const seconds = (performance.now() - started) / 1000;
      node.observeLatency(seconds * 1000);
      this.result.node = node.name;
      if (answer.verdict === 'pruned' && node.role === 'full') {
        observer.upstream?.(chain.pool, node, 'pruned', seconds);
        observer.retry?.(chain.pool, 'pruned');
        pruned = answer.call;
        route = ARCHIVE_FALLBACK;
        continue;
      }
      if (answer.call.trailers !== undefined) {
        observer.upstream?.(chain.pool, node, answer.verdict === 'ok' ? 'ok' : 'chain-error', seconds);
        return this.answerEnded(answer.call, answer.verdict, rate);
      }
      return this.relay(node, answer.call, rate, started);
    }
  }

  /**
   * One node's attempt, inside its breaker: throws for answers that blame the node (the
   * deadline passing counts as the node timing out); undefined when the client left.
   */
  private async attempt(node: PoolNode): Promise<{ call: StartedCall; verdict: Verdict } | undefined> {
    const headers = { ...this.metadata, 'grpc-timeout': formatGrpcTimeout(this.attempts.remaining()) };
    let call: StartedCall;
    try {
      call = await node.upstream.grpc.start(this.call.method, headers, this.body, this.attempts.timeoutFor(), this.abort.signal);
    } catch (err) {
      if (!(err instanceof CallAborted)) throw err;
      if (this.gone) return undefined;
      throw new NodeFailure('timeout', 'node did not answer before the deadline');
    }
    if (call.trailers === undefined) {
      // The first message must fit the cap before anything reaches the client.
      if (call.first !== undefined && !new MessageScanner(this.deps.maxResponseBytes).push(call.first)) {
        call.stream.close(constants.NGHTTP2_CANCEL);
        throw new NodeFailure('too-large', 'node answered a message over the cap');
      }
      return { call, verdict: 'ok' };
    }
    const status = statusOf(call.trailers) as { code: number; message: string };
    const verdict = status.code === 0 ? 'ok' : this.handler.judgeGrpc(this.call, status);
    if (verdict === 'node-failure') throw new NodeFailure('status', `node answered ${grpcCodeName(status.code)}`);
    if (verdict === 'throttled') throw new NodeThrottled();
    return { call, verdict };
  }

  /** A node's answer that ended before any message: relayed as one trailers-only response. */
  private answerEnded(call: StartedCall, verdict: Verdict, rate: Record<string, string> | undefined): number {
    const t = call.trailers as IncomingHttpHeaders;
    const code = (statusOf(t) as { code: number }).code;
    this.result.outcome =
      code === 0 ? 'ok' : verdict === 'ok' || verdict === 'chain-error' || verdict === 'pruned' ? 'chain_error' : 'upstream_failed';
    if (this.client.destroyed || this.client.closed) return this.cancelled();
    this.client.respond({ ...relayable(call.headers), ...relayable(t), ...rate, ':status': 200 }, { endStream: true });
    return code;
  }

  /** Stream the answer to the client as it arrives (backpressure both ways), then its trailers. */
  private relay(node: PoolNode, call: StartedCall, rate: Record<string, string> | undefined, started: number): Promise<number> {
    const { client, chain } = this;
    const upstream = call.stream;
    const scanner = new MessageScanner(this.deps.maxResponseBytes);
    return new Promise<number>((resolve) => {
      let trailers: IncomingHttpHeaders | undefined;
      let final: OutgoingHttpHeaders | undefined;
      let failure: 'failure' | 'timeout' | undefined;
      let settled = false;
      const finish = (t: OutgoingHttpHeaders, outcome: 'failure' | 'timeout' | undefined): void => {
        if (final !== undefined) return;
        final = t;
        failure = outcome;
        this.abort.signal.removeEventListener('abort', onAbort);
        if (!upstream.destroyed && !upstream.readableEnded) upstream.close(constants.NGHTTP2_CANCEL);
        if (!client.destroyed && !client.closed) client.end();
        else done();
      };
      const done = (): void => {
        if (settled) return;
        settled = true;
        if (!upstream.destroyed && !upstream.readableEnded) upstream.close(constants.NGHTTP2_CANCEL);
        const status = statusOf(final ?? {}) ?? { code: 1, message: '' };
        const code = status.code;
        const verdict = code === 0 ? 'ok' : this.handler.judgeGrpc(this.call, status);
        // A client leaving is not the node's doing.
        const outcome = this.gone
          ? 'ok'
          : (failure ?? (verdict === 'ok' ? 'ok' : verdict === 'chain-error' || verdict === 'pruned' ? 'chain-error' : 'failure'));
        chain.forwarder.observer.upstream?.(chain.pool, node, outcome, (performance.now() - started) / 1000);
        if (this.gone) this.cancelled();
        else if (failure === 'timeout') this.result.outcome = 'upstream_timeout';
        else this.result.outcome = code === 0 ? 'ok' : outcome === 'chain-error' ? 'chain_error' : 'upstream_failed';
        resolve(this.gone ? 1 : code);
      };
      const onAbort = (): void => {
        if (this.gone) finish({ 'grpc-status': '1' }, undefined);
        else finish(statusTrailers(GRPC_DEADLINE_EXCEEDED, 'Deadline exceeded while relaying the answer'), 'timeout');
      };
      const write = (chunk: Buffer): void => {
        if (!scanner.push(chunk)) {
          finish(statusTrailers(new GatewayError('UPSTREAM_FAILED').grpcCode, 'Node answered a message over the size cap'), 'failure');
          return;
        }
        if (!client.write(chunk)) upstream.pause();
      };
      client.respond({ ...relayable(call.headers), ...rate, ':status': 200 }, { waitForTrailers: true });
      client.on('wantTrailers', () => {
        if (final !== undefined && !client.destroyed) client.sendTrailers(relayable(final as IncomingHttpHeaders));
      });
      client.on('drain', () => upstream.resume());
      client.on('close', done);
      upstream.on('trailers', (t) => {
        trailers = t;
      });
      upstream.on('data', write);
      upstream.on('end', () => {
        if (trailers !== undefined && statusOf(trailers) !== undefined) finish(trailers, undefined);
        else finish(statusTrailers(14, 'Node ended the call without a status'), 'failure');
      });
      upstream.on('close', () => finish(statusTrailers(14, 'Node reset the call'), 'failure'));
      this.abort.signal.addEventListener('abort', onAbort);
      if (call.first !== undefined) write(call.first);
      upstream.resume();
    });
  }
}
