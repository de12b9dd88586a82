// Plugin loading (src/plugin/loader.ts): a module that is no plugin, and a plugin written
// for another contract than this gateway's, are refused at load with an error that
// says which; a plugin of this contract loads.

import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CONTRACT_VERSION } from '../../../src/plugin/contract.js';
import { loadPlugins } from '../../../src/plugin/loader.js';

describe('plugin loading (src/plugin/loader.ts)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-plugins-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A module at a file URL (loadPlugins imports a name it does not know as a package, and a URL is one). */
  const module = async (file: string, text: string): Promise<string> => {
    const path = join(dir, file);
    await writeFile(path, text);
    return pathToFileURL(path).href;
  };
  const plugin = (extra: string): string => `export default { name: 'p', ${extra} create() { return {}; } };\n`;

  it(`loads a plugin written for contract ${CONTRACT_VERSION}`, async () => {
    const name = await module('current.mjs', plugin(`contract: ${CONTRACT_VERSION},`));
    const { plugins, problems } = await loadPlugins([name]);
    expect(problems).to.deep.equal([]);
    expect(plugins.get(name)?.contract).to.equal(CONTRACT_VERSION);
  });

  it('refuses a plugin written for another contract, or naming none, saying which', async () => {
    const older = await module('older.mjs', plugin('contract: 1,'));
    const none = await module('none.mjs', plugin(''));
    const { plugins, problems } = await loadPlugins([older, none]);
    expect(problems).to.deep.equal([
      `plugin "${older}" is written for plugin contract 1; this noderouter loads plugins of contract ${CONTRACT_VERSION} (docs/plugins.md says what changed)`,
      `plugin "${none}" is written for an earlier plugin contract (it names none); this noderouter loads plugins of contract ${CONTRACT_VERSION} (docs/plugins.md says what changed)`,
    ]);
    expect(plugins.has(older)).to.equal(false);
    expect(plugins.has(none)).to.equal(false);
  });

  it('refuses a module that exports no plugin', async () => {
    const name = await module('nothing.mjs', 'export default { hello: 1 };\n');
    const { problems } = await loadPlugins([name]);
    expect(problems).to.deep.equal([`plugin "${name}" was found but does not export a chain plugin (default export with name and create)`]);
  });
});
