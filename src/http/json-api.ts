// Small pieces every JSON API of the gateway shares (the admin key API, the
// dashboard's): the `{"error":{"code","message"[,"field"]}}` answer and reading a JSON object
// body under a size cap.

import type { Context } from 'koa';
import { KeyInputError } from '../auth/key-store.js';
import { readBody } from './body.js';

/** `field`: the input field at fault, so a form can show the message beside it. */
export function problem(ctx: Context, status: number, code: string, message: string, field?: string): void {
  ctx.status = status;
  ctx.body = { error: field === undefined ? { code, message } : { code, message, field } };
}

/** The body as a JSON object ({} when empty); SyntaxError for bad JSON, KeyInputError for non-objects. */
export async function jsonBody(ctx: Context, max: number): Promise<Record<string, unknown>> {
  const raw = await readBody(ctx.req, max);
  if (raw.length === 0) return {};
  const v = JSON.parse(raw.toString('utf8')) as unknown;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new KeyInputError('body must be a JSON object');
  return v as Record<string, unknown>;
}
