// `${NAME}` and `${NAME:-default}` in string values, expanded after YAML parsing so
// a problem can name the path it came from. `$${` writes a literal `${`.

import { join } from './reader.js';

const VAR = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export function interpolate(v: unknown, env: NodeJS.ProcessEnv, path: string, problems: string[]): unknown {
  if (typeof v === 'string') {
    if (!v.includes('${')) return v;
    return v.replace(VAR, (match, name: string | undefined, fallback: string | undefined) => {
      if (name === undefined) return '${';
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      problems.push(`${path} uses \${${name}}, which is not set: export ${name} or write \${${name}:-default}`);
      return match;
    });
  }
  if (Array.isArray(v)) return v.map((item, i) => interpolate(item, env, join(path, i), problems));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(v)) out[k] = interpolate(child, env, join(path, k), problems);
    return out;
  }
  return v;
}
