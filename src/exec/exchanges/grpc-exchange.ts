// One gRPC call to one node, committed at the first byte: the attempt ends when the
// node's answer begins. An answer that ended before any message (a trailers-only
// status) is judged and may move to another node; one that carries a message is the
// answer (the first message held to the size cap first), and the transport streams
// the rest to the client, then says how it ended.

import { constants, type OutgoingHttpHeaders } from 'node:http2';
import { GRPC_UNAUTHENTICATED } from '../../grpc-wire/codes.js';
import { MessageScanner } from '../../grpc-wire/frames.js';
import { formatGrpcTimeout, grpcCodeName, statusOf } from '../../grpc-wire/status.js';
import type { GrpcCall, GrpcCodec } from '../../plugin/contract.js';
import { CallAborted, NodeFailure, NodeThrottled, type Cancel } from '../../pool/failures.js';
import type { StartedCall } from '../../pool/grpc-client.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { Exchange, Sent } from './exchange.js';
import type { UpstreamOutcome } from '../outcome.js';

/** A node's answer as the transport relays it. */
export interface GrpcAnswer {
  readonly started: StartedCall;
  /** For a streaming answer: how the relay ended, for the node's metrics and breaker. */
  end(outcome: UpstreamOutcome): void;
}

const NOTHING_TO_END = (): void => undefined;

export class GrpcExchange implements Exchange<GrpcCall, GrpcAnswer> {
  readonly batches = false;

  constructor(
    private readonly codec: GrpcCodec<unknown>,
    /** The request's framed message(s), sent as they came. */
    private readonly body: Buffer,
    /** Request metadata to send (hop-by-hop and gateway headers already removed). */
    private readonly metadata: OutgoingHttpHeaders,
    private readonly deadline: number,
    private readonly maxResponseBytes: number,
    /** Aborts when the client leaves or the deadline passes. */
    private readonly signal: AbortSignal,
    /** True once the client has left: an abort is then nobody's failure. */
    private readonly clientGone: () => boolean,
  ) {}

  async send(
    node: PoolNode,
    calls: readonly GrpcCall[],
    timeoutMs: number,
    _cancel?: Cancel,
    trace?: Readonly<Record<string, string>>,
  ): Promise<Array<Sent<GrpcAnswer>>> {
    const call = calls[0] as GrpcCall;
    // A traced call carries its attempt's traceparent in place of the client's.
    const headers = { ...this.metadata, ...trace, 'grpc-timeout': formatGrpcTimeout(this.deadline - Date.now()) };
    let started: StartedCall;
    try {
      started = await node.grpc.start(call.method, headers, this.body, timeoutMs, this.signal);
    } catch (err) {
      if (!(err instanceof CallAborted) || this.clientGone()) throw err;
      throw new NodeFailure('timeout', 'node did not answer before the deadline');
    }
    if (started.trailers === undefined) {
      // The first message must fit the cap before anything reaches the client.
      if (started.first !== undefined && !new MessageScanner(this.maxResponseBytes).push(started.first)) {
        started.stream.close(constants.NGHTTP2_CANCEL);
        throw new NodeFailure('too-large', 'node answered a message over the cap');
      }
      let end: (outcome: UpstreamOutcome) => void = NOTHING_TO_END;
      const settled = new Promise<UpstreamOutcome>((resolve) => {
        end = resolve;
      });
      return [{ answer: { started, end }, verdict: 'ok', sure: true, settled }];
    }
    const status = statusOf(started.trailers) as { code: number; message: string };
    // The node refused the gateway's credentials (its headers): never the chain's answer.
    if (status.code === GRPC_UNAUTHENTICATED) throw new NodeFailure('status', "node refused the gateway's credentials (UNAUTHENTICATED)");
    const verdict = status.code === 0 ? 'ok' : this.codec.judge(call, { kind: 'grpc', code: status.code, message: status.message });
    if (verdict === 'node_failure') throw new NodeFailure('status', `node answered ${grpcCodeName(status.code)}`);
    if (verdict === 'throttled') throw new NodeThrottled();
    return [{ answer: { started, end: NOTHING_TO_END }, verdict, sure: true }];
  }
}
