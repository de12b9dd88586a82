// One chain endpoint of a bench gateway's config, as YAML lines under `chains:`: the
// bench's usual chains (bench/run.ts) and the feature endpoints (bench/features.ts)
// are written the same way, so they differ only in what they set on purpose.

/** Nodes on the upstream's ports, full nodes but the last when `extra` says `archive`. */
export function chainYaml(name: string, plugin: string, ports: readonly number[], extra = '', cache = 'off'): string {
  const nodes = ports.map(
    (p, i) =>
      `      - { name: n${i}, url: "http://127.0.0.1:${p}", role: ${i === ports.length - 1 && extra.includes('archive') ? 'archive' : 'full'} }`,
  );
  return [
    `  ${name}:`,
    `    plugin: ${plugin}`,
    `    route: { path: /${name} }`,
    `    cache: ${cache}`,
    '    health: { intervalMs: 5000 }',
    extra,
    '    nodes:',
    ...nodes,
  ]
    .filter((l) => l !== '')
    .join('\n');
}
