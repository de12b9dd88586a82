// The dashboard's page files (HTML, CSS, ES modules in ./assets, shipped as they
// are: no build step), read once at startup from the package directory and served
// from memory with a content ETag, so browsers revalidate cheaply and never run a
// stale script after an upgrade.

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Context } from 'koa';
import { packageRoot } from '../../package-root.js';

export interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

export type AssetTable = ReadonlyMap<string, Asset>;

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export function assetsDir(): string {
  return join(packageRoot(), 'src', 'admin', 'dashboard', 'assets');
}

export async function loadAssets(dir: string = assetsDir()): Promise<AssetTable> {
  const table = new Map<string, Asset>();
  for (const name of await readdir(dir)) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    const body = await readFile(join(dir, name));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    table.set(name, { body, type, etag });
  }
  for (const required of ['index.html', 'operator.html']) {
    if (!table.has(required)) throw new Error(`dashboard asset ${required} is missing from ${dir}`);
  }
  return table;
}

/** Answer with an asset; 304 when the browser's copy is current. */
export function sendAsset(ctx: Context, asset: Asset): void {
  ctx.status = 200;
  ctx.type = asset.type;
  ctx.etag = asset.etag;
  // Revalidate every time: the ETag makes it a 304 without the body.
  ctx.set('cache-control', 'no-cache');
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = asset.body;
}
