// The configs of the container image (config/container.yaml) and of compose.yaml
// (config/compose.yaml) are config/gateway.yaml made for containers: the same chains,
// tiers and limits, node URLs on the devnet's host name instead of loopback, listeners
// on every address, one worker per core. Only those differences are allowed, so the
// three files cannot drift apart.

import { expect } from 'chai';
import { availableParallelism } from 'node:os';
import { readFile } from 'node:fs/promises';
import { parseConfig } from '../../../src/config/load.js';
import type { GatewayConfig } from '../../../src/config/types.js';

const load = async (file: string): Promise<GatewayConfig> => parseConfig(await readFile(file, 'utf8'), `/app/${file}`, {});

/** A config's chains with every node URL's host (http and ws) written as `devnet`. */
function onDevnetHost(config: GatewayConfig): unknown {
  return JSON.parse(JSON.stringify(config.chains).replaceAll('//127.0.0.1:', '//devnet:')) as unknown;
}

describe('container configs', () => {
  let shipped: GatewayConfig;
  before(async () => {
    shipped = await load('config/gateway.yaml');
  });

  for (const file of ['config/container.yaml', 'config/compose.yaml']) {
    it(`${file} serves gateway.yaml's chains and tiers, from containers`, async () => {
      const c = await load(file);
      expect(JSON.parse(JSON.stringify(c.chains))).to.deep.equal(onDevnetHost(shipped));
      expect(c.tiers).to.deep.equal(shipped.tiers);
      expect(c.keys).to.deep.equal(shipped.keys);
      expect(c.server).to.deep.equal({
        ...shipped.server,
        host: '0.0.0.0',
        adminHost: '0.0.0.0',
        grpcHost: '0.0.0.0',
        workers: availableParallelism(),
      });
      expect(c.devnet).to.deep.equal({ ...shipped.devnet, hosts: ['devnet'], listen: '0.0.0.0' });
    });
  }

  it('the image keeps its record in its data volume; compose in PostgreSQL with Redis', async () => {
    const image = await load('config/container.yaml');
    expect(image.store.record).to.deep.include({ kind: 'sqlite', path: '/app/data/noderouter.db' });
    expect(image.store.hot.kind).to.equal('memory');
    const compose = await load('config/compose.yaml');
    expect(compose.store.record).to.deep.include({ kind: 'postgres', url: 'postgres://noderouter:noderouter@postgres:5432/noderouter' });
    expect(compose.store.hot).to.deep.include({ kind: 'redis', servers: { kind: 'url', url: 'redis://redis:6379' } });
  });
});
