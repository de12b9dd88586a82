// What the dashboard needs to know about who is asking and where: the client's
// address (for the sign-in throttle), the origin the browser used (for the CSRF
// origin check), and whether the page was reached over https (Secure cookies).
// Forwarded headers count only with dashboard.trustProxy.

import type { Context } from 'koa';
import type { TLSSocket } from 'node:tls';

function first(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  const head = s?.split(',')[0]?.trim();
  return head === '' ? undefined : head;
}

/**
 * The last X-Forwarded-For entry is the one the trusted proxy added (the address it
 * saw); earlier entries come from the client and could be anything.
 */
export function clientAddress(ctx: Context, trustProxy: boolean): string {
  const header = trustProxy ? ctx.req.headers['x-forwarded-for'] : undefined;
  const joined = Array.isArray(header) ? header.join(',') : header;
  const last = joined?.split(',').at(-1)?.trim();
  return last !== undefined && last !== '' ? last : (ctx.req.socket.remoteAddress ?? 'unknown');
}

export function requestProtocol(ctx: Context, trustProxy: boolean): 'http' | 'https' {
  const forwarded = trustProxy ? first(ctx.req.headers['x-forwarded-proto']) : undefined;
  if (forwarded !== undefined) return forwarded === 'https' ? 'https' : 'http';
  return (ctx.req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http';
}

/** Origins a same-origin request may carry: the configured public one and the one this request was sent to. */
export function allowedOrigins(ctx: Context, trustProxy: boolean, publicUrl: string | undefined): string[] {
  const host = (trustProxy ? first(ctx.req.headers['x-forwarded-host']) : undefined) ?? ctx.req.headers.host;
  const list = host === undefined ? [] : [`${requestProtocol(ctx, trustProxy)}://${host}`.toLowerCase()];
  if (publicUrl !== undefined) list.push(publicUrl.toLowerCase());
  return list;
}

/** Whether cookies must be Secure: the public URL is https, or this request came over https. */
export function servedOverHttps(ctx: Context, trustProxy: boolean, publicUrl: string | undefined): boolean {
  return publicUrl?.startsWith('https:') === true || requestProtocol(ctx, trustProxy) === 'https';
}
