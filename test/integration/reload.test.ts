// Hot reload: a new config is validated whole and swapped in; unchanged nodes keep
// their health and breakers; an invalid file is refused and the old config serves on.

import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

describe('config reload', function () {
  this.timeout(30_000);
  let stack: Stack;
  const call = (path: string) => rpc(stack.url(path), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: stack.key });

  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  it('swaps in a valid config, keeping unchanged nodes with their breaker state', async () => {
    const before = stack.gateway.runtimes().find((c) => c.name === 'l1');
    const node = before?.pool.nodes.find((n) => n.name === 'l1-full-1');
    node?.breaker.open();
    const text = await readFile(stack.configFile, 'utf8');
    // Change l1's strategy (same nodes) and add an endpoint serving the same nodes under /l1b.
    const l1Nodes = text.slice(text.indexOf('  l1:'), text.indexOf('  l2-rollup:'));
    const l1b = l1Nodes
      .replace('  l1:', '  l1b:')
      .replace('path: /l1 }', 'path: /l1b }')
      .replace(/name: l1-/g, 'name: l1b-');
    await writeFile(stack.configFile, text.replace('    network: l1\n', '    network: l1\n    strategy: weighted\n') + l1b);
    expect(await stack.gateway.reload()).to.equal(true);

    const after = stack.gateway.runtimes().find((c) => c.name === 'l1');
    expect(after).to.not.equal(before);
    expect(after?.config.strategy).to.equal('weighted');
    expect(after?.pool.nodes.find((n) => n.name === 'l1-full-1')).to.equal(node);
    expect(node?.breakerState).to.equal('open');
    expect((await call('/l1')).status).to.equal(200);
    expect((await call('/l1b')).status).to.equal(200);
    expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_config_reloads_total\{result="ok"\} 1/);
    node?.breaker.close();
  });

  it('refuses an invalid file, counts it, and keeps serving the old config', async () => {
    const good = await readFile(stack.configFile, 'utf8');
    await writeFile(stack.configFile, good.replace('role: archive', 'role: archival'));
    expect(await stack.gateway.reload()).to.equal(false);
    expect((await call('/l1')).status).to.equal(200);
    expect((await call('/l1b')).status).to.equal(200);
    expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_config_reloads_total\{result="failed"\} 1/);
    await writeFile(stack.configFile, good);
  });

  it('lets in-flight requests finish when their chain is replaced', async () => {
    for (const n of ['l1-full-1', 'l1-full-2', 'l1-archive-1']) await stack.devnet.node(n).setFaults({ hold: true });
    const pending = call('/l1');
    // The call is at a node, waiting, before the reload replaces its runtime.
    const arrived = (): boolean =>
      ['l1-full-1', 'l1-full-2', 'l1-archive-1'].some((n) => stack.devnet.node(n).received.some((r) => r.body.includes('blockNumber')));
    await until(arrived, { what: 'a node has the call' });
    const text = await readFile(stack.configFile, 'utf8');
    // Drop a node from l1: its runtime is rebuilt and the old one closes after draining.
    await writeFile(stack.configFile, text.replace(/ {6}- \{ name: l1-full-2,[^\n]*\n/, ''));
    // The old runtime closes once its call is answered: the reload ends after the release.
    const reloaded = stack.gateway.reload();
    const l1Nodes = (): number => stack.gateway.runtimes().find((c) => c.name === 'l1')?.pool.nodes.length ?? 0;
    await until(() => l1Nodes() === 2, { what: 'the new runtime is in place' });
    for (const n of ['l1-full-1', 'l1-full-2', 'l1-archive-1']) await stack.devnet.node(n).clearFaults();
    expect(await reloaded).to.equal(true);
    const res = await pending;
    expect(res.status).to.equal(200);
    expect(
      stack.gateway
        .runtimes()
        .find((c) => c.name === 'l1')
        ?.pool.nodes.map((n) => n.name),
    ).to.deep.equal(['l1-full-1', 'l1-archive-1']);
    for (const n of ['l1-full-1', 'l1-full-2', 'l1-archive-1']) await stack.devnet.node(n).clearFaults();
  });
});
