// The admin node API: list every node with its hold and what it is doing, and cordon
// (no new calls), drain (no calls, subscriptions moved off) or uncordon one. Behind the
// admin token like the key API; a change is written to the store first, so every
// instance sharing it applies it, and survives reloads and restarts.

import type Router from '@koa/router';
import type { Context } from 'koa';
import { KeyInputError } from '../auth/key-store.js';
import type { ChainRuntime } from '../chain-runtime.js';
import { isGatewayError } from '../errors.js';
import { HoldError, type HoldAction, type HoldView, type NodeHolds } from '../node-holds.js';
import { jsonBody, problem } from './json-api.js';

export interface NodeApiDeps {
  readonly holds: NodeHolds;
  readonly chains: () => readonly ChainRuntime[];
  readonly authorized: (header: string | undefined) => boolean;
  readonly maxBodyBytes: number;
}

const ACTIONS: ReadonlySet<string> = new Set<HoldAction>(['cordon', 'drain', 'uncordon']);
const STATUS: Record<HoldError['code'], number> = { NODE_NOT_FOUND: 404, INVALID_INPUT: 400, STORE_UNAVAILABLE: 503 };

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
      return problem(ctx, 401, 'UNAUTHORIZED', 'Admin token required: Authorization: Bearer <token>');
    }
    try {
      await next();
    } catch (err) {
      if (err instanceof HoldError) {
        if (err.code === 'STORE_UNAVAILABLE') ctx.set('retry-after', '1');
        return problem(ctx, STATUS[err.code], err.code, err.message);
      }
      if (err instanceof SyntaxError) return problem(ctx, 400, 'INVALID_JSON', 'body is not valid JSON');
      if (err instanceof KeyInputError) return problem(ctx, 400, 'INVALID_INPUT', err.message);
      if (isGatewayError(err)) return problem(ctx, err.status, err.code, err.message);
      throw err;
    }
  };

  router.use('/admin/nodes', guard);
  router.get('/admin/nodes', (ctx) => {
    ctx.body = { nodes: nodeViews(deps.holds, deps.chains()) };
  });
  router.post('/admin/nodes/:chain/:node/:action', async (ctx) => {
    const action = ctx.params.action as string;
    if (!ACTIONS.has(action)) return problem(ctx, 404, 'NOT_FOUND', 'No such admin route (cordon, drain or uncordon)');
    const body = await jsonBody(ctx, deps.maxBodyBytes);
    await deps.holds.change(ctx.params.chain as string, ctx.params.node as string, action as HoldAction, body.reason);
    const view = nodeViews(deps.holds, deps.chains()).find((v) => v.chain === ctx.params.chain && v.node === ctx.params.node);
    ctx.body = { node: view };
  });
}
