// Small pieces every JSON API of the gateway shares (the admin key API, the
// dashboard's): the `{"error":{"code","message"[,"field"]}}` answer and reading a JSON object
// body under a size cap.

import type { Context, Middleware } from 'koa';
import { CONTROL_ERRORS, ControlError, type ControlCode } from '../control-errors.js';
import { isGatewayError } from '../errors.js';
import { KeyInputError } from '../auth/key-store.js';
import { readBody } from '../transports/http/body.js';

/** A refusal from the catalogue (src/control-errors.ts); `field`: the input field at fault, so a form can show the message beside it. */
export function problem(ctx: Context, code: ControlCode, message: string, field?: string): void {
  ctx.status = CONTROL_ERRORS[code].status;
  ctx.body = { error: field === undefined ? { code, message } : { code, message, field } };
}

/** What an error thrown under a control-plane route is in the catalogue, if anything. */
function controlError(err: unknown): ControlError | undefined {
  if (err instanceof ControlError) return err;
  if (err instanceof SyntaxError) return new ControlError('INVALID_JSON', 'body is not valid JSON');
  if (isGatewayError(err) && err.code === 'BODY_TOO_LARGE') return new ControlError('BODY_TOO_LARGE', 'request body too large');
  return undefined;
}

/**
 * The control plane's one error middleware: a refusal is answered from the catalogue
 * (with `Retry-After` when it says when), in the wording `messages` gives a code on this
 * surface; anything else goes to `unexpected`, or on up.
 */
export function controlErrors(
  unexpected?: (ctx: Context, err: unknown) => void,
  messages: Partial<Record<ControlCode, string>> = {},
): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const refusal = controlError(err);
      if (refusal === undefined) {
        if (unexpected === undefined) throw err;
        return unexpected(ctx, err);
      }
      if (refusal.retryAfter !== undefined) ctx.set('retry-after', String(refusal.retryAfter));
      problem(ctx, refusal.code, messages[refusal.code] ?? refusal.message, refusal.field);
    }
  };
}

/** The body as a JSON object ({} when empty); SyntaxError for bad JSON, KeyInputError for non-objects. */
export async function jsonBody(ctx: Context, max: number): Promise<Record<string, unknown>> {
  const raw = await readBody(ctx.req, max);
  if (raw.length === 0) return {};
  const v = JSON.parse(raw.toString('utf8')) as unknown;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new KeyInputError('body must be a JSON object');
  return v as Record<string, unknown>;
}
