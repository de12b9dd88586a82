// The plugin contract's types (src/plugin/contract.ts), held by the type check CI runs
// (`npm run typecheck` covers test/): a plugin's `ctx.options` is typed from its own
// `optionsSchema`, a setting the schema does not name is a compile error, a plugin must
// name the contract it is written for, and a handler whose HTTP codec makes a kind of
// call must carry that kind's codec. The run checks the options arrive as typed.

import { expect } from 'chai';
import { DEFAULT_JSONRPC_LIMITS, parseJsonRpcBody } from '../../../src/jsonrpc/envelope.js';
import { CONTRACT_VERSION, definePlugin, type ChainHandler, type HttpCodec, type JsonRpcCodec } from '../../../src/plugin/contract.js';
import { jsonRpcAtRoot } from '../../../src/sdk/jsonrpc-http.js';
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

const parts = { classify: () => ({ archive: false, cost: 1, label: 'm' }), probe: () => Promise.resolve({ height: 1 }) };
const jsonrpc: JsonRpcCodec<undefined> = { parse: (text) => parseJsonRpcBody(text, DEFAULT_JSONRPC_LIMITS), judge: () => 'ok' };
const rest: HttpCodec<undefined, 'passthrough'> = {
  errorStyle: 'rest',
  parse: (req) => ({
    kind: 'passthrough',
    call: { kind: 'passthrough', method: req.path, request: { method: 'GET', path: req.path }, meta: undefined },
  }),
};
const handlers: ChainHandler<undefined>[] = [
  { ...parts, jsonrpc, http: jsonRpcAtRoot(jsonrpc) },
  { ...parts, passthrough: { judge: () => 'ok' }, http: rest },
  // No HTTP codec: served on the gRPC listener or over WebSocket only.
  { ...parts, jsonrpc },
];
// @ts-expect-error JSON-RPC requests without a JSON-RPC codec
const noJsonRpc: ChainHandler<undefined> = { ...parts, http: jsonRpcAtRoot(jsonrpc) };
// @ts-expect-error passthrough calls without a passthrough codec
const noPassthrough: ChainHandler<undefined> = { ...parts, jsonrpc, http: rest };

describe('the plugin contract’s types (src/plugin/contract.ts)', () => {
  it('takes a handler with a codec for each kind of call its HTTP codec makes', () => {
    expect(handlers.map((h) => [h.http !== undefined, h.jsonrpc !== undefined, h.passthrough !== undefined])).to.deep.equal([
      [true, true, false],
      [true, false, true],
      [false, true, false],
    ]);
    // The two that do not compile are still objects at run time: what the type check refused is what they lack.
    expect([noJsonRpc.jsonrpc, noPassthrough.passthrough]).to.deep.equal([undefined, undefined]);
  });

  it('gives create() the options its schema types, as config gave them', () => {
    expect(typed.contract).to.equal(CONTRACT_VERSION);
    typed.create({ chain: 'c', limits: DEFAULT_JSONRPC_LIMITS, options: { window: 5, namespaces: ['eth'] } });
    expect(seen).to.deep.equal([[5, ['eth']]]);
  });
});
