// What the config reader says is wrong with a file's text: its problems, each named by
// its path, or none when the file is taken.

import { ConfigError, parseConfig } from '../../src/config/load.js';

export async function configProblems(text: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  try {
    await parseConfig(text, '/etc/nr.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}
