// The admin node API: list every node with its hold and what it is doing, and cordon
// (no new calls), drain (no calls, subscriptions moved off) or uncordon one. Behind the
// admin token like the key API; a change is written to the store first, so every
// instance sharing it applies it, and survives reloads and restarts.

import type Router from '@koa/router';
import type { Context } from 'koa';
import type { ChainRuntime } from '../chain/runtime.js';
import type { HoldAction, HoldView, NodeHolds } from '../ops/holds/node-holds.js';
import { controlErrors, jsonBody, problem } from './json-api.js';

export interface NodeApiDeps {
  readonly holds: NodeHolds;
  readonly chains: () => readonly ChainRuntime[];
  readonly authorized: (header: string | undefined) => boolean;
  readonly maxBodyBytes: number;
}

const ACTIONS: ReadonlySet<string> = new Set<HoldAction>(['cordon', 'drain', 'uncordon']);

/** A node's hold with what it carries now: in rotation (health), requests in flight, WebSocket subscriptions. */
export interface NodeView extends HoldView {
  readonly role: string | null;
  readonly inRotation: boolean | null;
  readonly inFlight: number | null;
  readonly subscriptions: number | null;
}

export function nodeViews(holds: NodeHolds, chains: readonly ChainRuntime[]): NodeView[] {
  return holds.list().map((h) => {
    const rt = chains.find((c) => c.name === h.chain);
    const n = rt?.pool.nodes.find((x) => x.name === h.node);
    if (rt === undefined || n === undefined) return { ...h, role: null, inRotation: null, inFlight: null, subscriptions: null };
    return { ...h, role: n.role, inRotation: n.inRotation, inFlight: n.inFlight, subscriptions: rt.subscriptions?.carriedBy(n) ?? 0 };
  });
}

export function mountNodeApi(router: Router, deps: NodeApiDeps): void {
  const guard = async (ctx: Context, next: () => Promise<unknown>): Promise<void> => {
    if (!deps.authorized(ctx.get('authorization') || undefined)) {
      ctx.set('www-authenticate', 'Bearer');
      return problem(ctx, 'UNAUTHORIZED', 'Admin token required: Authorization: Bearer <token>');
    }
    await next();
  };

  router.use('/admin/nodes', controlErrors(), guard);
  router.get('/admin/nodes', (ctx) => {
    ctx.body = { nodes: nodeViews(deps.holds, deps.chains()) };
  });
  router.post('/admin/nodes/:chain/:node/:action', async (ctx) => {
    const action = ctx.params.action as string;
    if (!ACTIONS.has(action)) return problem(ctx, 'NOT_FOUND', 'No such admin route (cordon, drain or uncordon)');
    const body = await jsonBody(ctx, deps.maxBodyBytes);
    await deps.holds.change(ctx.params.chain as string, ctx.params.node as string, action as HoldAction, body.reason);
    const view = nodeViews(deps.holds, deps.chains()).find((v) => v.chain === ctx.params.chain && v.node === ctx.params.node);
    ctx.body = { node: view };
  });
}
