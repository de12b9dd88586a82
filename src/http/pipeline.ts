// The request path for chain traffic over HTTP, after the endpoint is known:
// key → body → plugin.parse → permissions → plugin.classify → admission → forward →
// answer. It reads the Node request and fills an HttpAnswer; the app writes it.
// Nothing here knows Koa, and nothing downstream sees the request.

import type { IncomingMessage } from 'node:http';
import type { KeyCache } from '../auth/key-cache.js';
import { extractKey, type ExtractedKey } from '../auth/extract.js';
import { hashKey } from '../auth/key-format.js';
import type { KeyRecord } from '../auth/key-store.js';
import { CallAccess } from '../calls/access.js';
import { answerJsonRpc, type RpcAnswer } from '../calls/jsonrpc-calls.js';
import { outcomeOf, type RequestOutcome } from '../calls/request-record.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { InboundRequest, ParsedRequest, RpcItem } from '../plugin.js';
import type { UpstreamReply } from '../pool/upstream.js';
import type { Admission } from '../quota/admission.js';
import type { Limiter } from '../quota/limiter.js';
import { readBody } from './body.js';
import { requestErrorText, restErrorText } from './answers.js';
import type { HttpAnswer } from './http-answer.js';

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

export function setRateHeaders(out: HttpAnswer, admission: Admission | undefined): void {
  const h = admission?.headers;
  if (h === undefined) return;
  out.set('ratelimit-limit', String(h.limit));
  out.set('ratelimit-remaining', String(h.remaining));
  out.set('ratelimit-reset', String(h.reset));
  if (admission !== undefined && !admission.allowed) out.set('retry-after', String(admission.retryAfter));
}

function writeAnswer(out: HttpAnswer, a: RpcAnswer): void {
  setRateHeaders(out, a.admission);
  if (a.cache !== undefined) out.set('x-cache', a.cache);
  if (a.headers !== undefined) for (const k in a.headers) out.set(k, a.headers[k] as string);
  out.status = a.status;
  out.body = a.body;
}

export class Pipeline {
  readonly access: CallAccess;

  constructor(private readonly deps: PipelineDeps) {
    this.access = new CallAccess({ limiter: deps.limiter, tiers: deps.tiers, metrics: deps.metrics });
  }

  private fail(out: HttpAnswer, err: GatewayError, body: string): void {
    out.status = err.status;
    if (err.headers !== undefined) for (const k in err.headers) out.set(k, err.headers[k] as string);
    out.body = body;
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

  /** `query` is the raw query string without '?'. */
  async handle(
    req: IncomingMessage,
    query: string,
    chain: ChainRuntime,
    rest: string,
    result: RequestOutcome,
    out: HttpAnswer,
  ): Promise<void> {
    const { deps } = this;
    const style = chain.handler.errorStyle;
    let extracted: ExtractedKey | undefined;
    let keyError: GatewayError | undefined;
    try {
      extracted = extractKey(req.headers.apikey, query);
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
      out.set('connection', 'close');
      return this.fail(out, e, requestErrorText(e, style, undefined, false));
    }
    const inbound: InboundRequest = { method: req.method ?? 'GET', path: rest, query: extracted?.query ?? '', headers: req.headers, body };

    let record: KeyRecord | undefined;
    if (keyError === undefined) {
      try {
        const hash = hashKey((extracted as ExtractedKey).key);
        record = (deps.keys.peekHash(hash) ?? (await deps.keys.lookupHash(hash))).record;
      } catch (err) {
        keyError = err as GatewayError;
      }
    }
    if (keyError !== undefined || record === undefined) {
      const e = keyError ?? new GatewayError('INVALID_KEY');
      result.outcome = outcomeOf(e);
      const { items, batch } = this.idsFor(chain, inbound);
      return this.fail(out, e, requestErrorText(e, style, items, batch));
    }
    result.key = record;
    deps.touch(record.id, deps.now());

    let parsed: ParsedRequest;
    try {
      parsed = chain.handler.parse(inbound);
    } catch (err) {
      const e = isGatewayError(err) ? err : new GatewayError('INVALID_REQUEST', { cause: err });
      result.outcome = outcomeOf(e);
      return this.fail(out, e, requestErrorText(e, style, undefined, false));
    }
    if (parsed.kind === 'unsupported') {
      const e = new GatewayError(parsed.status === 405 ? 'HTTP_METHOD_NOT_ALLOWED' : 'ENDPOINT_NOT_FOUND', { message: parsed.message });
      result.outcome = outcomeOf(e);
      return this.fail(out, e, requestErrorText(e, style, undefined, false));
    }
    const tier = this.access.tierFor(record, chain);
    if (isGatewayError(tier)) {
      result.outcome = outcomeOf(tier);
      const items = parsed.kind === 'jsonrpc' ? parsed.items : undefined;
      return this.fail(out, tier, requestErrorText(tier, style, items, parsed.kind === 'jsonrpc' && parsed.batch));
    }
    if (parsed.kind === 'jsonrpc') {
      const deadline = Date.now() + deps.requestTimeoutMs;
      return writeAnswer(out, await answerJsonRpc(this.access, chain, record, tier, parsed, result, deadline));
    }
    return this.passthrough(out, chain, record, tier, parsed, result);
  }

  private async passthrough(
    out: HttpAnswer,
    chain: ChainRuntime,
    record: KeyRecord,
    tier: TierConfig,
    parsed: Extract<ParsedRequest, { kind: 'passthrough' }>,
    result: RequestOutcome,
  ): Promise<void> {
    const style = chain.handler.errorStyle;
    const routing = this.access.route(chain, record, tier, parsed.call);
    const refuse = (e: GatewayError): void => {
      result.outcome = outcomeOf(e);
      this.fail(out, e, style === 'rest' ? restErrorText(e) : requestErrorText(e, style, undefined, false));
    };
    if (isGatewayError(routing)) return refuse(routing);
    result.label = routing.label;
    const up = parsed.upstream;
    const cache = routing.cacheTtlMs !== undefined && up.method === 'GET' ? chain.cache : undefined;
    // The height is part of the call; the key, removed before parsing, never is.
    const key = cache?.key(`${up.path}\u0000${up.headers?.['x-cosmos-block-height'] ?? ''}`);
    const hit = key === undefined ? undefined : await cache?.get(key);
    if (cache !== undefined) out.set('x-cache', hit === undefined ? 'MISS' : 'HIT');
    const charge = hit !== undefined && tier.cacheHitsFree ? 0 : routing.cost;
    const admitted = charge > 0 ? await this.access.admit(chain, record, tier, charge) : undefined;
    if (isGatewayError(admitted)) return refuse(admitted);
    setRateHeaders(out, admitted?.admission);
    if (admitted?.error !== undefined) return refuse(admitted.error);
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
      out.status = reply.status;
      if (reply.contentType !== undefined) out.type = reply.contentType;
      if (reply.relayHeaders !== undefined) for (const k in reply.relayHeaders) out.set(k, reply.relayHeaders[k] as string);
      out.body = reply.text;
      result.outcome = reply.status < 400 ? 'ok' : 'chain_error';
      if (reply.status >= 400) this.deps.limiter.countErrors(record.id, chain.name, 1);
    } catch (err) {
      const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
      this.deps.limiter.countErrors(record.id, chain.name, 1);
      refuse(e);
    }
  }
}
