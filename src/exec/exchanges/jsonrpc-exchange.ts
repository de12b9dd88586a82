// JSON-RPC items to one node in one POST, and each answer paired back to its item.
// A lone item is relayed as its raw text. A batch is relayed as the client's items,
// each the node answers with only its id's value changed to the gateway's own (its
// place in the batch), so answers are paired by what the gateway sent, never by ids a
// client chose (which may collide); each answer goes back with the client's id spliced
// in place of the gateway's, the rest of it as the node sent it. Only answers paired
// by the gateway's ids may be cached.

import type { CachedAnswer } from '../../cache/cache-store.js';
import { rpcWriter, type RpcWriter } from '../../jsonrpc/dialect.js';
import { replyError, withParams } from '../../jsonrpc/envelope.js';
import { isObjectText, memberRaw, memberStart, skipValue, splitArray, withMemberRaw } from '../../jsonrpc/raw-json.js';
import type {
  AnswerCheck,
  JsonRpcCall,
  JsonRpcCodec,
  JsonRpcReply,
  PoolView,
  Routing,
  RpcErrorInfo,
  VerifyMode,
} from '../../plugin/contract.js';
import { NodeFailure, NodeThrottled, refusedCredentials, type Cancel } from '../../pool/failures.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { UpstreamReply } from '../../pool/upstream.js';
import type { CacheCodec, Exchange, Parts, Sent, StateIds } from './exchange.js';

/** The answers of one node request, by call: text (undefined: a notification), and which were paired by position only. */
interface Paired {
  readonly texts: Array<string | undefined>;
  readonly unsure: readonly boolean[] | undefined;
}

const NO_VIEW: PoolView = Object.freeze({ head: undefined, fullEarliest: undefined });
const NOTIFIED: Paired = Object.freeze({ texts: [undefined], unsure: undefined });
/** The ids the gateway gives batch items are their places in the batch: at most this many digits. */
const GATEWAY_ID_DIGITS = 6;

/**
 * An item as the node gets it in a batch: the client's bytes with only its id's value
 * replaced by the gateway's. The parser refused every item whose member names a Go
 * node could read otherwise than JSON.parse did (member-names.ts: no two names alike
 * ignoring case, `id` `method` `params` `jsonrpc` spelt exactly), so the one `id`
 * member found here is the one the node reads, and the rest is what was checked.
 */
function underGatewayId(rpc: RpcWriter, call: JsonRpcCall, id: number): string {
  const raw = call.raw;
  const start = memberStart(raw, 'id');
  const end = start < 0 ? -1 : skipValue(raw, start);
  // Every call with an id has it in its text; written anew should one ever not.
  if (end < 0) return rpc.item(call, id, memberRaw(raw, 'params'));
  return raw.slice(0, start) + id + raw.slice(end);
}

/** A batch as the node gets it: notifications as sent, every other item under its gateway id. */
function batchBody(rpc: RpcWriter, calls: readonly JsonRpcCall[]): string {
  let body = '[';
  for (let k = 0; k < calls.length; k++) {
    const c = calls[k] as JsonRpcCall;
    if (k > 0) body += ',';
    body += c.id === undefined ? c.raw : underGatewayId(rpc, c, k);
  }
  return `${body}]`;
}

/** The gateway id written at [from, to) of `s` (digits only), or -1. */
function gatewayId(s: string, from: number, to: number): number {
  if (to - from > GATEWAY_ID_DIGITS) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return to > from ? n : -1;
}

export type { RpcWriter };

/** The writer of a chain's own JSON-RPC answers: its codec's dialect (2.0 without a JSON-RPC codec). */
export function chainRpc(codec: JsonRpcCodec<unknown> | undefined): RpcWriter {
  return rpcWriter(codec?.dialect);
}

/** The chain's answer checks (`verify`), and where their results are counted. */
export interface AnswerChecks {
  readonly mode: VerifyMode;
  /** An answer the plugin could check: `method` is one the plugin checks, so a bounded label. */
  checked(node: PoolNode, method: string, result: Exclude<AnswerCheck, 'unchecked'>): void;
}

export class JsonRpcExchange implements Exchange<JsonRpcCall, string>, CacheCodec<JsonRpcCall, string> {
  readonly batches = true;
  readonly state: StateIds<JsonRpcCall, string> | undefined;
  /** The answers this exchange writes itself, in the codec's dialect. */
  readonly rpc: RpcWriter;

  constructor(
    private readonly codec: JsonRpcCodec<unknown>,
    /** The pool's view now (for splitting ranges that end at the head). */
    private readonly view: () => PoolView = () => NO_VIEW,
    private readonly checks?: AnswerChecks,
  ) {
    this.rpc = chainRpc(codec);
    const notFound = codec.state?.notFound;
    this.state = notFound === undefined ? undefined : jsonRpcStateIds(notFound, this.rpc);
  }

  alreadyAccepted(_call: JsonRpcCall, sent: Sent<string>): boolean {
    const text = sent.answer;
    if (text === undefined || this.codec.alreadyAccepted === undefined) return false;
    return this.codec.alreadyAccepted({ kind: 'jsonrpc', status: 200, text, error: replyError(text) });
  }

  agreeable(answer: string): { status: number; text: string } {
    return { status: 200, text: answer };
  }

  resultId(answer: string): string | undefined {
    const id = memberRaw(answer, 'result');
    return id !== undefined && id.charCodeAt(0) === 34 ? id : undefined;
  }

  split(call: JsonRpcCall, how: 'fit' | 'halves'): Parts<JsonRpcCall, string> | undefined {
    return this.codec.split?.(call, how, this.view());
  }

  async send(
    node: PoolNode,
    calls: readonly JsonRpcCall[],
    timeoutMs: number,
    cancel?: Cancel,
    trace?: Readonly<Record<string, string>>,
  ): Promise<Array<Sent<string>>> {
    const single = calls.length === 1;
    const body = single ? (calls[0] as JsonRpcCall).raw : batchBody(this.rpc, calls);
    // A hedge that lost is cancelled: left to run, it would hold a connection to a hung node until its attempt timeout.
    const reply = await node.http.postJson(body, timeoutMs, cancel, trace);
    if (reply.status === 429) throw new NodeThrottled();
    if (reply.status >= 500) throw new NodeFailure('status', `node answered HTTP ${reply.status}`);
    const refused = refusedCredentials(reply.status);
    if (refused !== undefined) throw refused;
    const { texts, unsure } = single ? this.singleAnswer(reply, calls[0] as JsonRpcCall) : this.batchAnswers(reply, calls);
    const checks = this.checks !== undefined && this.checks.mode !== 'off';
    const out = new Array<Sent<string>>(calls.length);
    for (let k = 0; k < calls.length; k++) {
      const call = calls[k] as JsonRpcCall;
      const text = texts[k];
      const sure = unsure?.[k] !== true;
      if (text === undefined) {
        out[k] = { answer: undefined, verdict: 'ok', sure };
        continue;
      }
      const answer: JsonRpcReply = { kind: 'jsonrpc', status: reply.status, text, error: replyError(text) };
      const verdict = this.codec.judge(call, answer);
      if (verdict === 'node_failure') throw new NodeFailure('garbage', 'node answer judged a failure');
      if (verdict === 'throttled') throw new NodeThrottled();
      // A good answer the plugin's check refused is relayed, never cached.
      const verified = verdict !== 'ok' || !checks || this.checked(node, call, answer);
      out[k] = { answer: text, verdict, sure: sure && verified };
    }
    return out;
  }

  /**
   * The plugin's check of a good answer, counted. A mismatch under `enforce` is the node
   * failing (blame.ts holds it until another node answers the call); under `observe` the
   * answer is relayed but never cached. False for a mismatch that is relayed.
   */
  private checked(node: PoolNode, call: JsonRpcCall, answer: JsonRpcReply): boolean {
    const result = this.codec.check?.(call, answer) ?? 'unchecked';
    if (result === 'unchecked') return true;
    const checks = this.checks as AnswerChecks;
    checks.checked(node, call.method, result);
    if (result === 'verified') return true;
    if (checks.mode === 'enforce') throw new NodeFailure('garbage', 'node answer failed verification');
    return false;
  }

  private singleAnswer(reply: UpstreamReply, call: JsonRpcCall): Paired {
    if (call.id === undefined) return NOTIFIED;
    if (!isObjectText(reply.text)) throw new NodeFailure('garbage', 'node answer is not a JSON object');
    // One request, one answer: the pairing is certain once the id is one this call may get.
    const id = memberRaw(reply.text, 'id');
    if (id === call.id || this.sameId(id, call.id) || (id !== undefined && this.codec.fixedReplyIds?.includes(id) === true)) {
      return { texts: [reply.text], unsure: undefined };
    }
    throw new NodeFailure('garbage', 'node answered another call (wrong id)');
  }

  /** Ids equal as JSON values (a node may re-serialise `1.0` as `1`). */
  private sameId(got: string | undefined, sent: string): boolean {
    if (got === undefined) return false;
    try {
      return JSON.parse(got) === JSON.parse(sent);
    } catch {
      return false;
    }
  }

  /**
   * Answers of a batch, by the gateway's ids, each with the client's id spliced in. A
   * node that answers some items under a fixed id (CometBFT's -1) has those paired by
   * position among the rest, and relayed with the id it gave; anything else unpaired
   * is the node failing.
   */
  private batchAnswers(reply: UpstreamReply, calls: readonly JsonRpcCall[]): Paired {
    const items = splitArray(reply.text);
    if (items === undefined) throw new NodeFailure('garbage', 'node answer to a batch is not a JSON array');
    let wanted = 0;
    for (const c of calls) if (c.id !== undefined) wanted++;
    if (items.length !== wanted) throw new NodeFailure('garbage', `node answered ${items.length} of ${wanted} batch items`);
    const texts = new Array<string | undefined>(calls.length);
    let loose: string[] | undefined;
    for (const item of items) {
      const start = memberStart(item, 'id');
      const end = start < 0 ? -1 : skipValue(item, start);
      const k = end < 0 ? -1 : gatewayId(item, start, end);
      const call = calls[k];
      if (call === undefined || call.id === undefined || texts[k] !== undefined) {
        if (end < 0 || this.codec.fixedReplyIds?.includes(item.slice(start, end)) !== true) {
          throw new NodeFailure('garbage', 'node answered a batch item the gateway did not send');
        }
        (loose ??= []).push(item);
        continue;
      }
      texts[k] = item.slice(0, start) + call.id + item.slice(end);
    }
    if (loose === undefined) return { texts, unsure: undefined };
    const unsure = new Array<boolean>(calls.length).fill(false);
    let next = 0;
    for (let k = 0; k < calls.length; k++) {
      if (texts[k] !== undefined || (calls[k] as JsonRpcCall).id === undefined) continue;
      texts[k] = loose[next++];
      unsure[k] = true;
    }
    return { texts, unsure };
  }

  key(call: JsonRpcCall, routing: Routing): string | undefined {
    if (routing.cacheTtlMs === undefined || call.id === undefined) return undefined;
    // The params as sent, not as JS reads them: large numbers a double cannot tell apart stay apart.
    return `${call.method}\u0000${memberRaw(call.raw, 'params') ?? 'null'}`;
  }

  keep(answer: string): CachedAnswer | undefined {
    const result = memberRaw(answer, 'result');
    // Errors, and empty answers that may fill later (null), are never kept.
    if (result === undefined || result === 'null') return undefined;
    return { status: 200, body: result };
  }

  give(entry: CachedAnswer, call: JsonRpcCall): string {
    return this.rpc.result(call.id, entry.body);
  }

  /** The same answer for another caller: its id, the node's result or error untouched. */
  share(answer: string, call: JsonRpcCall): string {
    const { id } = call;
    const result = memberRaw(answer, 'result');
    if (result !== undefined && result !== 'null') return this.rpc.result(id, result);
    // A 1.0 answer's error comes with "result":null beside it.
    const error = memberRaw(answer, 'error');
    if (error !== undefined && error !== 'null') return this.rpc.error(id, error);
    return result !== undefined ? this.rpc.result(id, result) : answer;
  }
}

/** JSON-RPC node state: created ids are a create's `result`; a use names its id first in params. */
function jsonRpcStateIds(notFound: RpcErrorInfo, rpc: RpcWriter): StateIds<JsonRpcCall, string> {
  const notFoundText = JSON.stringify(notFound);
  return {
    created(answer) {
      const id = memberRaw(answer, 'result');
      return id === undefined || id === 'null' ? undefined : id;
    },
    withId: (answer, id) => withMemberRaw(answer, 'result', id),
    use(call, nodeId) {
      const params = Array.isArray(call.params) ? [...(call.params as unknown[])] : [];
      params[0] = JSON.parse(nodeId) as unknown;
      return withParams(call, params);
    },
    notFound: (call) => rpc.error(call.id, notFoundText),
    gone: (answer) => replyError(answer)?.message === notFound.message,
  };
}
