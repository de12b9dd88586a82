// The config's JSON Schema as shipped for editors: generated from the shape (so it
// cannot go stale), referenced by every shipped config, and accepting them under a
// standard validator, ${ENV} strings included; plugins' options are checked under
// the chains naming them.

import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'chai';
import { parse } from 'yaml';
import { schemaText, SCHEMA_FILE } from '../../../src/config/json-schema.js';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('config JSON Schema', () => {
  let shipped: string;
  let validate: ValidateFunction;

  before(async () => {
    shipped = await readFile(join(ROOT, SCHEMA_FILE), 'utf8');
    // A standard draft-07 validator, as editors use: errorMessage is only an annotation.
    const ajv = new Ajv({ allErrors: true });
    ajv.addVocabulary(['errorMessage']);
    validate = ajv.compile(JSON.parse(shipped) as object);
  });

  it('is what `npm run schema` generates from the shape and the built-in plugins', async () => {
    expect(shipped === (await schemaText()), 'config/noderouter.schema.json is stale: run `npm run schema`').to.equal(true);
  });

  it('is referenced by every shipped config, which it accepts with its ${ENV} strings', async () => {
    const dir = join(ROOT, 'config');
    const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml'));
    expect(files).to.include('gateway.yaml');
    for (const f of files) {
      const text = await readFile(join(dir, f), 'utf8');
      const ref = /^# yaml-language-server: \$schema=(\S+)\n/.exec(text);
      expect(ref, `${f} names no schema on its first line`).to.not.equal(null);
      expect(resolve(dirname(join(dir, f)), ref?.[1] ?? '')).to.equal(join(ROOT, SCHEMA_FILE));
      const ok = validate(parse(text));
      expect(validate.errors ?? [], f).to.deep.equal([]);
      expect(ok).to.equal(true);
    }
  });

  it('refuses what check-config refuses: unknown keys, bad words, bounds, and a plugin’s unknown options', () => {
    const base = (chain: object) => ({
      tiers: { free: {} },
      chains: { l1: { plugin: 'evm', route: { path: '/l1' }, nodes: [{ name: 'a', url: 'http://127.0.0.1:1' }], ...chain } },
    });
    expect(validate(base({}))).to.equal(true);
    expect(validate(base({ options: { getLogsMaxRange: 0, costs: { getLogs: 3 } } }))).to.equal(true);
    expect(validate({ ...base({}), extra: 1 })).to.equal(false);
    expect(validate(base({ strategy: 'fastest' }))).to.equal(false);
    expect(validate(base({ maxAttempts: 11 }))).to.equal(false);
    expect(validate(base({ maxAttempts: '${MAX_ATTEMPTS:-3}' }))).to.equal(true);
    expect(validate(base({ options: { colour: 'red' } }))).to.equal(false);
    expect(validate.errors?.map((e) => e.instancePath)).to.include('/chains/l1/options');
    // Another family's options are not evm's.
    expect(validate(base({ options: { openMethods: ['unsafe_flush_mempool'] }, plugin: 'sdk-rest' }))).to.equal(false);
    // A plugin the schema does not know (an npm package) takes any options.
    expect(validate(base({ plugin: 'noderouter-plugin-fixture', options: { helloCost: 2 } }))).to.equal(true);
  });
});
