// The plugin contract's types (src/plugin/contract.ts), held by the type check CI runs
// (`npm run typecheck` covers test/): a plugin's `ctx.options` is typed from its own
// `optionsSchema`, a setting the schema does not name is a compile error, and a plugin
// must name the contract it is written for. The run checks the options arrive as typed.

import { expect } from 'chai';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import { CONTRACT_VERSION, definePlugin, type ChainHandler } from '../../../src/plugin/contract.js';
import { NameList, OptionsSchema, PositiveInt } from '../../../src/sdk/options.js';

const seen: Array<[number | undefined, readonly string[] | undefined]> = [];

const typed = definePlugin({
  name: 'typed',
  contract: 2,
  optionsSchema: OptionsSchema({ window: PositiveInt(), namespaces: NameList('[eth]') }),
  create(ctx): ChainHandler {
    const window: number | undefined = ctx.options.window;
    const namespaces: readonly string[] | undefined = ctx.options.namespaces;
    // @ts-expect-error a setting the schema does not name
    void ctx.options.windw;
    // @ts-expect-error a number setting is no string
    const wrong: string | undefined = ctx.options.window;
    void wrong;
    seen.push([window, namespaces]);
    return { classify: () => ({ archive: false, cost: 1, label: 'm' }), probe: () => Promise.resolve({ height: 1 }) };
  },
});

// @ts-expect-error a plugin names the contract it is written for
definePlugin({ name: 'unversioned', create: () => typed.create({ chain: 'c', limits: DEFAULT_JSONRPC_LIMITS, options: {} }) });

describe('the plugin contract’s types (src/plugin/contract.ts)', () => {
  it('gives create() the options its schema types, as config gave them', () => {
    expect(typed.contract).to.equal(CONTRACT_VERSION);
    typed.create({ chain: 'c', limits: DEFAULT_JSONRPC_LIMITS, options: { window: 5, namespaces: ['eth'] } });
    expect(seen).to.deep.equal([[5, ['eth']]]);
  });
});
