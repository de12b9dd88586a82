// Answering a JSON-RPC body: each item is checked, classified and admitted as part
// of one request, valid items go to nodes together, and the answer is assembled in
// request order from the nodes' item text (never re-serialised). Notifications get
// no item; a request of notifications only gets 204.

import type { Context } from 'koa';
import type { KeyRecord } from '../auth/key-store.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { rpcErrorText } from '../jsonrpc/envelope.js';
import { isInvalid, type ParsedRequest } from '../plugin.js';
import type { ItemResult, RoutedCall } from '../pool/forwarder.js';
import { answerCalls, lookupCached } from './cached-calls.js';
import { outcomeOf, type Pipeline, type RequestOutcome } from './pipeline.js';

type JsonRpcRequest = Extract<ParsedRequest, { kind: 'jsonrpc' }>;

function itemOutcome(r: ItemResult): string {
  if (r === undefined) return 'ok';
  if (typeof r !== 'string') return outcomeOf(r);
  return r.includes('"error"') ? 'chain_error' : 'ok';
}

export async function answerJsonRpc(
  ctx: Context,
  pipeline: Pipeline,
  chain: ChainRuntime,
  record: KeyRecord,
  tier: TierConfig,
  parsed: JsonRpcRequest,
  result: RequestOutcome,
): Promise<void> {
  const { items, batch } = parsed;
  const n = items.length;
  ctx.type = 'application/json';
  if (batch && n > tier.maxBatch) {
    const e = new GatewayError('BATCH_TOO_LARGE', { message: `Batch of ${n} is over this tier's limit of ${tier.maxBatch}` });
    result.outcome = outcomeOf(e);
    ctx.status = e.status;
    ctx.body = `[${items.map((it) => rpcErrorText(it.id, e.rpcCode, e.message)).join(',')}]`;
    return;
  }
  const results = new Array<ItemResult>(n);
  const routed: RoutedCall[] = [];
  const slots: number[] = [];
  let cost = 0;
  for (let i = 0; i < n; i++) {
    const item = items[i] as (typeof items)[number];
    if (isInvalid(item)) {
      results[i] = new GatewayError('INVALID_REQUEST', { message: item.message });
      continue;
    }
    const routing = pipeline.route(chain, record, tier, item);
    if (isGatewayError(routing)) {
      results[i] = routing;
      continue;
    }
    if (slots.length === 0) result.label = routing.label;
    routed.push({ call: item, routing });
    slots.push(i);
    cost += routing.cost;
  }

  if (routed.length > 0) {
    const look = await lookupCached(chain.cache, routed);
    if (look.cacheable > 0) ctx.set('x-cache', look.hitCount === routed.length ? 'HIT' : 'MISS');
    // Cached answers count like any other unless the tier says they are free.
    const charge = tier.cacheHitsFree ? cost - look.hitCost : cost;
    const limited = charge > 0 ? await pipeline.admit(ctx, chain, record, tier, charge) : undefined;
    if (limited !== undefined) {
      for (const i of slots) results[i] = limited;
    } else {
      const answers = await answerCalls(chain, routed, look, Date.now() + pipeline.requestTimeoutMs, result);
      // Usage counts errors among admitted calls only: refused items were never calls.
      let errors = 0;
      for (let k = 0; k < slots.length; k++) {
        const r = answers[k];
        results[slots[k] as number] = r;
        if (itemOutcome(r) !== 'ok') errors++;
      }
      if (errors > 0) pipeline.countErrors(record.id, chain.name, errors);
    }
  }
  result.outcome = itemOutcome(results[0]);

  if (!batch) {
    const r = results[0];
    const item = items[0] as (typeof items)[number];
    if (r === undefined) {
      ctx.status = 204;
      ctx.body = null;
    } else if (typeof r === 'string') {
      ctx.status = 200;
      ctx.body = r;
    } else {
      ctx.status = r.status;
      if (r.headers !== undefined) for (const [k, v] of Object.entries(r.headers)) ctx.set(k, v);
      ctx.body = rpcErrorText(item.id, r.rpcCode, r.message);
    }
    return;
  }
  const parts: string[] = [];
  let onlyError: GatewayError | undefined;
  let allSameError = true;
  for (let i = 0; i < n; i++) {
    const r = results[i];
    const item = items[i] as (typeof items)[number];
    if (typeof r === 'string') {
      parts.push(r);
      allSameError = false;
    } else if (r !== undefined) {
      parts.push(rpcErrorText(item.id, r.rpcCode, r.message));
      if (onlyError === undefined) onlyError = r;
      else if (onlyError.code !== r.code) allSameError = false;
    }
  }
  if (parts.length === 0) {
    ctx.status = 204;
    ctx.body = null;
    return;
  }
  // A batch refused as a whole (rate limit, no node) carries that status; else 200.
  if (allSameError && onlyError !== undefined && onlyError.status !== 200) {
    ctx.status = onlyError.status;
    if (onlyError.headers !== undefined) for (const [k, v] of Object.entries(onlyError.headers)) ctx.set(k, v);
  } else {
    ctx.status = 200;
  }
  ctx.body = `[${parts.join(',')}]`;
}
