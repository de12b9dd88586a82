// The request path for chain traffic, after the endpoint is known:
// key → body → plugin.parse → permissions → plugin.classify → admission → forward →
// answer. Koa is only the carrier: this module reads ctx.req and writes ctx.status,
// headers and body, and nothing downstream sees the koa context.

import type { Context } from 'koa';
import type { KeyCache } from '../auth/key-cache.js';
import { extractKey, type ExtractedKey } from '../auth/extract.js';
import type { KeyRecord } from '../auth/key-store.js';
import { admitCall, chainRefusal, routeCall } from '../call-access.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Call, InboundRequest, ParsedRequest, RpcItem, Routing } from '../plugin.js';
import type { UpstreamReply } from '../pool/upstream.js';
import type { Admission } from '../quota/admission.js';
import type { Limiter } from '../quota/limiter.js';
import { outcomeOf, type RequestOutcome } from '../request-record.js';
import { readBody } from './body.js';
import { requestErrorText, restErrorText } from './answers.js';
import { answerJsonRpc } from './jsonrpc-answer.js';

export interface PipelineDeps {
  readonly keys: KeyCache;
  readonly limiter: Limiter;
  /** Read per request, so a reload's new tiers apply at once. */
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly requestTimeoutMs: number;
  /** The clock of limits and usage days (tests move it); deadlines use real time. */
  readonly now: () => number;
  touch(keyId: string, at: number): void;
}

export { outcomeOf, type RequestOutcome } from '../request-record.js';

export function setRateHeaders(ctx: Context, admission: Admission): void {
  const h = admission.headers;
  if (h === undefined) return;
  ctx.set('ratelimit-limit', String(h.limit));
  ctx.set('ratelimit-remaining', String(h.remaining));
  ctx.set('ratelimit-reset', String(h.reset));
  if (!admission.allowed) ctx.set('retry-after', String(admission.retryAfter));
}

export class Pipeline {
  constructor(private readonly deps: PipelineDeps) {}

  private fail(ctx: Context, err: GatewayError, body: string): void {
    ctx.status = err.status;
    if (err.headers !== undefined) for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
    ctx.type = 'application/json';
    ctx.body = body;
  }

  /** Ids for an error answer before the body was accepted: best effort, never throws. */
  private idsFor(chain: ChainRuntime, inbound: InboundRequest): { items: readonly RpcItem[] | undefined; batch: boolean } {
    try {
      const parsed = chain.handler.parse(inbound);
      if (parsed.kind === 'jsonrpc') return { items: parsed.items, batch: parsed.batch };
    } catch {
      // Unparseable: answered with id null.
    }
    return { items: undefined, batch: false };
  }

  async handle(ctx: Context, chain: ChainRuntime, rest: string, result: RequestOutcome): Promise<void> {
    const { deps } = this;
    const req = ctx.req;
    const style = chain.handler.errorStyle;
    let extracted: ExtractedKey | undefined;
    let keyError: GatewayError | undefined;
    try {
      extracted = extractKey(req.headers.apikey, ctx.querystring);
    } catch (err) {
      keyError = err as GatewayError;
    }
    // From here on nothing can forward the key: it is gone from the headers.
    delete req.headers.apikey;

    let body: Buffer;
    try {
      body = await readBody(req, deps.maxBodyBytes);
    } catch (err) {
      const e = err as GatewayError;
      result.outcome = outcomeOf(e);
      ctx.set('connection', 'close');
      return this.fail(ctx, e, requestErrorText(e, style, undefined, false));
    }
    const inbound: InboundRequest = { method: req.method ?? 'GET', path: rest, query: extracted?.query ?? '', headers: req.headers, body };

    let record: KeyRecord | undefined;
    if (keyError === undefined) {
      try {
        record = await deps.keys.lookup((extracted as ExtractedKey).key);
      } catch (err) {
        keyError = err as GatewayError;
      }
    }
    if (keyError !== undefined || record === undefined) {
      const e = keyError ?? new GatewayError('INVALID_KEY');
      result.outcome = outcomeOf(e);
      const { items, batch } = this.idsFor(chain, inbound);
      return this.fail(ctx, e, requestErrorText(e, style, items, batch));
    }
    result.key = record;
    deps.touch(record.id, deps.now());

    let parsed: ParsedRequest;
    try {
      parsed = chain.handler.parse(inbound);
    } catch (err) {
      const e = isGatewayError(err) ? err : new GatewayError('INVALID_REQUEST', { cause: err });
      result.outcome = outcomeOf(e);
      return this.fail(ctx, e, requestErrorText(e, style, undefined, false));
    }
    if (parsed.kind === 'unsupported') {
      const e = new GatewayError(parsed.status === 405 ? 'HTTP_METHOD_NOT_ALLOWED' : 'ENDPOINT_NOT_FOUND', { message: parsed.message });
      result.outcome = outcomeOf(e);
      return this.fail(ctx, e, requestErrorText(e, style, undefined, false));
    }
    const tier = deps.tiers()[record.tier];
    const forbidden = chainRefusal(record, tier, chain.name);
    if (forbidden !== undefined || tier === undefined) {
      const e = forbidden ?? new GatewayError('FORBIDDEN');
      result.outcome = outcomeOf(e);
      const items = parsed.kind === 'jsonrpc' ? parsed.items : undefined;
      return this.fail(ctx, e, requestErrorText(e, style, items, parsed.kind === 'jsonrpc' && parsed.batch));
    }
    if (parsed.kind === 'jsonrpc') return answerJsonRpc(ctx, this, chain, record, tier, parsed, result);
    return this.passthrough(ctx, chain, record, tier, parsed, result);
  }

  /** Permission and classification of one call; a GatewayError when refused. */
  route(chain: ChainRuntime, record: KeyRecord, tier: TierConfig, call: Call): Routing | GatewayError {
    return routeCall(chain, record, tier, call, this.deps.metrics);
  }

  async admit(ctx: Context, chain: ChainRuntime, record: KeyRecord, tier: TierConfig, cost: number): Promise<GatewayError | undefined> {
    const { admission, refusal } = await admitCall(this.deps.limiter, this.deps.metrics, chain.name, record, tier, cost);
    if (admission !== undefined) setRateHeaders(ctx, admission);
    return refusal;
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    this.deps.limiter.countErrors(keyId, chain, errors);
  }

  get requestTimeoutMs(): number {
    return this.deps.requestTimeoutMs;
  }

  private async passthrough(
    ctx: Context,
    chain: ChainRuntime,
    record: KeyRecord,
    tier: TierConfig,
    parsed: Extract<ParsedRequest, { kind: 'passthrough' }>,
    result: RequestOutcome,
  ): Promise<void> {
    const style = chain.handler.errorStyle;
    const routing = this.route(chain, record, tier, parsed.call);
    const refuse = (e: GatewayError): void => {
      result.outcome = outcomeOf(e);
      this.fail(ctx, e, style === 'rest' ? restErrorText(e) : requestErrorText(e, style, undefined, false));
    };
    if (isGatewayError(routing)) return refuse(routing);
    result.label = routing.label;
    const up = parsed.upstream;
    const cache = routing.cacheTtlMs !== undefined && up.method === 'GET' ? chain.cache : undefined;
    // The height is part of the call; the key, removed before parsing, never is.
    const key = cache?.key(`${up.path}\u0000${up.headers?.['x-cosmos-block-height'] ?? ''}`);
    const hit = key === undefined ? undefined : await cache?.get(key);
    if (cache !== undefined) ctx.set('x-cache', hit === undefined ? 'MISS' : 'HIT');
    const charge = hit !== undefined && tier.cacheHitsFree ? 0 : routing.cost;
    const limited = charge > 0 ? await this.admit(ctx, chain, record, tier, charge) : undefined;
    if (limited !== undefined) return refuse(limited);
    try {
      const deadline = Date.now() + this.deps.requestTimeoutMs;
      const fetch = (): Promise<UpstreamReply> => chain.forwarder.passthrough(parsed.call, routing, up, deadline, result);
      let reply: Pick<UpstreamReply, 'status' | 'text' | 'contentType' | 'relayHeaders'>;
      if (hit !== undefined) {
        reply = { status: hit.status, text: hit.body, contentType: hit.contentType, relayHeaders: hit.headers };
      } else if (cache !== undefined && key !== undefined) {
        const shared = await cache.coalesce(key, fetch);
        reply = shared.value;
        if (shared.leader && reply.status === 200) {
          cache.set(
            key,
            { status: 200, body: reply.text, contentType: reply.contentType, headers: reply.relayHeaders },
            routing.cacheTtlMs as number,
            routing.cacheHeight,
          );
        }
      } else {
        reply = await fetch();
      }
      ctx.status = reply.status;
      ctx.type = reply.contentType ?? 'application/json';
      if (reply.relayHeaders !== undefined) for (const [k, v] of Object.entries(reply.relayHeaders)) ctx.set(k, v);
      ctx.body = reply.text;
      result.outcome = reply.status < 400 ? 'ok' : 'chain_error';
      if (reply.status >= 400) this.deps.limiter.countErrors(record.id, chain.name, 1);
    } catch (err) {
      const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
      this.deps.limiter.countErrors(record.id, chain.name, 1);
      refuse(e);
    }
  }
}
