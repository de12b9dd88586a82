// Operators' holds on nodes kept across restarts, the same in the file beside the keys
// and in the SQLite and PostgreSQL records: set, changed, lifted, and there again when reopened.

import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileHoldStore, type HoldStore, type NodeHoldRecord } from '../../../src/ops/holds/hold-store.js';
import { PgHoldStore } from '../../../src/record/pg-holds.js';
import { SqliteHoldStore } from '../../../src/record/sqlite-holds.js';
import { tempSchema } from '../../support/pg.js';
import { tempRecord } from '../../support/record.js';

interface Backend {
  open(): Promise<HoldStore>;
  cleanup(): Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'file',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'noderouter-holds-'));
      return { open: () => FileHoldStore.open(join(dir, 'keys.nodes.json')), cleanup: () => rm(dir, { recursive: true, force: true }) };
    },
  ],
  [
    'sqlite',
    async () => {
      const record = await tempRecord();
      return { open: async () => new SqliteHoldStore(record.open()), cleanup: () => record.cleanup() };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = await tempSchema();
      return { open: async () => new PgHoldStore(await schema.open()), cleanup: () => schema.cleanup() };
    },
  ],
];

const cordoned: NodeHoldRecord = { state: 'cordoned', since: '2026-11-20T10:00:00.000Z', reason: 'disk' };
const draining: NodeHoldRecord = { state: 'draining', since: '2026-11-20T11:00:00.000Z', reason: '' };

for (const [name, open] of backends) {
  describe(`node holds: ${name}`, () => {
    let backend: Backend;
    beforeEach(async () => {
      backend = await open();
    });
    afterEach(() => backend.cleanup());

    it('keeps holds by chain and node across a restart; a change replaces, a lift removes', async () => {
      const store = await backend.open();
      expect(await store.all()).to.deep.equal(new Map());
      await store.set('eth/a', cordoned);
      await store.set('eth/b', cordoned);
      await store.set('eth/b', draining);
      await store.set('sol/c', cordoned);
      await store.set('sol/c', undefined);
      await store.set('sol/never', undefined);
      await store.close();
      const again = await backend.open();
      expect(await again.all()).to.deep.equal(
        new Map([
          ['eth/a', cordoned],
          ['eth/b', draining],
        ]),
      );
      await again.close();
    });
  });
}
