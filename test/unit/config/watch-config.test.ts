// Hot reload's file watch: a file written in place, and a Kubernetes ConfigMap volume,
// where the kubelet swaps the `..data` symlink the config's own symlink goes through.

import { expect } from 'chai';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchConfig } from '../../../src/config/watch-config.js';
import { until } from '../../support/until.js';

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('watching the config file', () => {
  let dir: string;
  let stop: (() => void) | undefined;
  let changes: number;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-watch-'));
    changes = 0;
  });
  afterEach(async () => {
    stop?.();
    await rm(dir, { recursive: true, force: true });
  });

  it('reloads when the file is written in place, and not for another file beside it', async () => {
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, 'a: 1\n');
    stop = watchConfig(file, () => changes++);
    await writeFile(join(dir, 'notes.txt'), 'x');
    await mkdir(join(dir, 'data'));
    // Past the settle time, nothing was called for files that are not the config.
    await pause(400);
    expect(changes).to.equal(0);
    await writeFile(file, 'a: 2\n');
    await until(() => changes === 1, { what: 'the write seen' });
  });

  it('reloads when a ConfigMap volume swaps its ..data link', async () => {
    // The kubelet's layout: gateway.yaml -> ..data/gateway.yaml, ..data -> ..<timestamp>.
    await mkdir(join(dir, '..2026_11_27_1'));
    await writeFile(join(dir, '..2026_11_27_1', 'gateway.yaml'), 'a: 1\n');
    await symlink('..2026_11_27_1', join(dir, '..data'));
    await symlink('..data/gateway.yaml', join(dir, 'gateway.yaml'));
    stop = watchConfig(join(dir, 'gateway.yaml'), () => changes++);

    await mkdir(join(dir, '..2026_11_27_2'));
    await writeFile(join(dir, '..2026_11_27_2', 'gateway.yaml'), 'a: 2\n');
    await symlink('..2026_11_27_2', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
    await rm(join(dir, '..2026_11_27_1'), { recursive: true });
    await until(() => changes === 1, { what: 'the swap seen' });
    await pause(400);
    expect(changes, 'one swap, one reload').to.equal(1);
  });
});
