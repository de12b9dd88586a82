// A passthrough call (REST, the CometBFT URI form) to one node: the request the plugin
// built, below the node's base path, and the answer relayed as the node sent it
// (status, content type, the headers the plugin names). GETs may be cached, keyed by
// path and query and the request headers the plugin says the answer varies with.

import type { CachedAnswer } from '../../cache/cache-store.js';
import type { PassthroughCall, PassthroughCodec, Routing } from '../../plugin/contract.js';
import { NodeFailure, NodeThrottled, refusedCredentials, type Cancel } from '../../pool/failures.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { UpstreamReply } from '../../pool/upstream.js';
import type { CacheCodec, Exchange, Sent } from './exchange.js';

export class PassthroughExchange implements Exchange<PassthroughCall, UpstreamReply>, CacheCodec<PassthroughCall, UpstreamReply> {
  readonly batches = false;

  constructor(private readonly codec: PassthroughCodec<unknown>) {}

  async send(
    node: PoolNode,
    calls: readonly PassthroughCall[],
    timeoutMs: number,
    cancel?: Cancel,
    trace?: Readonly<Record<string, string>>,
  ): Promise<Array<Sent<UpstreamReply>>> {
    const call = calls[0] as PassthroughCall;
    const req = call.request;
    const sent = trace === undefined ? req : { ...req, headers: { ...req.headers, ...trace } };
    const reply = await node.http.request(sent, timeoutMs, cancel);
    const refused = refusedCredentials(reply.status);
    if (refused !== undefined) throw refused;
    const verdict = this.codec.judge(call, { kind: 'passthrough', status: reply.status, text: reply.text });
    if (verdict === 'node_failure') throw new NodeFailure('garbage', `node answered HTTP ${reply.status} unusably`);
    if (verdict === 'throttled') throw new NodeThrottled();
    return [{ answer: reply, verdict, sure: true }];
  }

  agreeable(reply: UpstreamReply): { status: number; text: string } {
    return reply;
  }

  key(call: PassthroughCall, routing: Routing): string | undefined {
    const req = call.request;
    if (routing.cacheTtlMs === undefined || req.method !== 'GET') return undefined;
    // "GET " keeps these keys apart from JSON-RPC ones, which begin with a method name.
    if (routing.cacheVary === undefined) return `GET ${req.path}`;
    let key = `GET ${req.path}`;
    for (const h of routing.cacheVary) key += `\u0000${req.headers?.[h] ?? ''}`;
    return key;
  }

  keep(reply: UpstreamReply): CachedAnswer | undefined {
    if (reply.status !== 200) return undefined;
    return { status: 200, body: reply.text, contentType: reply.contentType, headers: reply.relayHeaders };
  }

  give(entry: CachedAnswer): UpstreamReply {
    return { status: entry.status, text: entry.body, contentType: entry.contentType, relayHeaders: entry.headers };
  }

  share(reply: UpstreamReply): UpstreamReply {
    return reply;
  }
}
