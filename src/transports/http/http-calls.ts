// Chain traffic over HTTP once the endpoint is known: who is calling (before the body
// is read: a refused key costs no more than its headers), the body, the plugin's
// reading of the request, then the call path, and the answer written into an
// HttpAnswer. It translates HTTP in and out; everything between is the call path's.
// A keyed request that becomes no call (a body over the limit, one the plugin cannot
// read, a path it does not serve) is charged like one (CallPath.refused): refusing it
// cost the gateway work, and a flood of them meets 429.

import type { IncomingMessage } from 'node:http';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { Principal } from '../../exec/principal.js';
import type { CallPath } from '../../exec/call-path.js';
import type { Identifier } from '../../exec/identify.js';
import { RestrictedError } from '../../exec/restrict.js';
import { outcomeOf, type RequestOutcome } from '../../exec/request-record.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { errorText } from '../shared/answers.js';
import { answerJsonRpc, type RpcAnswer } from '../shared/jsonrpc-answer.js';
import type { HttpCodec, InboundRequest, PassthroughCall } from '../../plugin/contract.js';
import type { Admission } from '../../quota/admission.js';
import { readBody } from './body.js';
import type { HttpAnswer } from './http-answer.js';

/** A chain endpoint the traffic listener serves: its plugin reads HTTP requests. */
export type HttpChain = ChainRuntime & { readonly handler: { readonly http: HttpCodec<unknown> } };

export function isHttpChain(rt: ChainRuntime): rt is HttpChain {
  return rt.handler.http !== undefined;
}

/** Limits read per request, so a reload applies them at once. */
export interface HttpLimits {
  readonly maxBodyBytes: number;
  readonly requestTimeoutMs: number;
}

export interface HttpCallsDeps {
  readonly identifier: Identifier;
  readonly path: CallPath;
  readonly limits: () => HttpLimits;
}

export function setRateHeaders(out: HttpAnswer, admission: Admission | undefined): void {
  const h = admission?.headers;
  if (h === undefined) return;
  out.set('ratelimit-limit', String(h.limit));
  out.set('ratelimit-remaining', String(h.remaining));
  out.set('ratelimit-reset', String(h.reset));
  if (admission !== undefined && !admission.allowed) out.set('retry-after', String(admission.retryAfter));
}

function writeRpc(out: HttpAnswer, a: RpcAnswer): void {
  setRateHeaders(out, a.admission);
  if (a.cache !== undefined) out.set('x-cache', a.cache);
  if (a.headers !== undefined) for (const k in a.headers) out.set(k, a.headers[k] as string);
  out.status = a.status;
  out.body = a.body;
}

export class HttpCalls {
  constructor(private readonly deps: HttpCallsDeps) {}

  private fail(out: HttpAnswer, trace: RequestOutcome, err: GatewayError, chain: HttpChain): void {
    trace.outcome = outcomeOf(err);
    out.status = err.status;
    if (err.headers !== undefined) for (const k in err.headers) out.set(k, err.headers[k] as string);
    out.body = errorText(err, chain.handler.http.errorStyle, chain.rpc);
  }

  /** A keyed request that became no call: charged, answered with its own error, or with 429 when the key is flooding. */
  private async refuse(out: HttpAnswer, trace: RequestOutcome, err: GatewayError, chain: HttpChain, principal: Principal): Promise<void> {
    const charged = await this.deps.path.refused(chain, principal, err.code === 'BATCH_TOO_LARGE' ? 'batch' : 'invalid', trace);
    setRateHeaders(out, charged.admission);
    return this.fail(out, trace, charged.error ?? err, chain);
  }

  /** `query` is the raw query string without '?'; `rest` the path below the endpoint's prefix. */
  async handle(req: IncomingMessage, query: string, chain: HttpChain, rest: string, trace: RequestOutcome, out: HttpAnswer): Promise<void> {
    const { deps } = this;
    let who = deps.identifier.identify(chain, req, query, 'http');
    // From here on nothing can forward the key: it is gone from the headers.
    delete req.headers.apikey;
    if (who instanceof Promise) who = await who;
    if (who instanceof RestrictedError) {
      trace.key = who.key;
      out.withholdCors = who.reason === 'origin';
    }
    if (isGatewayError(who)) {
      // An auth failure ends its connection: a key guesser pays a new connection per guess.
      out.set('connection', 'close');
      return this.fail(out, trace, who, chain);
    }
    const { principal } = who;
    trace.key = principal.record;
    const limits = deps.limits();
    let body: Buffer;
    try {
      body = await readBody(req, limits.maxBodyBytes);
      trace.bytesIn = body.length;
    } catch (err) {
      out.set('connection', 'close');
      return this.refuse(out, trace, err as GatewayError, chain, principal);
    }
    const inbound: InboundRequest = { method: req.method ?? 'GET', path: rest, query: who.query, headers: req.headers, body };
    let parsed;
    try {
      parsed = chain.handler.http.parse(inbound);
    } catch (err) {
      const e = isGatewayError(err) ? err : new GatewayError('INVALID_REQUEST', { cause: err });
      return this.refuse(out, trace, e, chain, principal);
    }
    const deadline = Date.now() + limits.requestTimeoutMs;
    switch (parsed.kind) {
      case 'unsupported': {
        const code = parsed.status === 405 ? 'HTTP_METHOD_NOT_ALLOWED' : 'ENDPOINT_NOT_FOUND';
        return this.refuse(out, trace, new GatewayError(code, { message: parsed.message }), chain, principal);
      }
      case 'jsonrpc': {
        const a = answerJsonRpc(deps.path, { chain, principal, request: parsed, deadline, trace });
        return writeRpc(out, a instanceof Promise ? await a : a);
      }
      case 'passthrough':
        return this.passthrough(out, chain, principal, parsed.call, deadline, trace);
    }
  }

  private async passthrough(
    out: HttpAnswer,
    chain: HttpChain,
    principal: Principal,
    call: PassthroughCall,
    deadline: number,
    trace: RequestOutcome,
  ): Promise<void> {
    const exchange = chain.passthrough;
    if (exchange === undefined) throw new Error(`plugin "${chain.config.plugin}" made a passthrough call but has no passthrough codec`);
    const run = await this.deps.path.run({ chain, principal, calls: [call], exchange, cache: exchange, deadline, trace });
    setRateHeaders(out, run.admission);
    if (run.cache !== undefined) out.set('x-cache', run.cache);
    const r = run.results[0];
    if (r === undefined || isGatewayError(r)) return this.fail(out, trace, r ?? new GatewayError('UPSTREAM_FAILED'), chain);
    const reply = r.answer;
    if (reply === undefined) return this.fail(out, trace, new GatewayError('UPSTREAM_FAILED'), chain);
    out.status = reply.status;
    if (reply.contentType !== undefined) out.type = reply.contentType;
    if (reply.relayHeaders !== undefined) for (const k in reply.relayHeaders) out.set(k, reply.relayHeaders[k] as string);
    out.body = reply.text;
  }
}
