// The installed package's own directory, found by walking up from this module to
// the package.json named "noderouter": the same answer from src/ under tsx and from
// dist/src/ under `npm start`. Files tsc does not copy (the dashboard's page and
// script, the shipped config) are read from there. Called at startup only.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'noderouter') {
      root = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the noderouter package directory (package.json) above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}
