// Containers in tests: podman and podman-compose as the CLI runs them, the image .ci/run
// builds beforehand (NODEROUTER_IMAGE, default localhost/noderouter:ci), and what a test
// may do without them. Under CI (CI set, as .ci/run exports it) a missing podman or
// image fails the suite; elsewhere the suite is skipped with the reason printed.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const IMAGE = process.env.NODEROUTER_IMAGE ?? 'localhost/noderouter:ci';

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number;
}

/** Runs a command to its end; a non-zero exit is a result, not an error. */
export async function command(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 120_000,
): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await run(file, [...args], {
      env: { ...process.env, ...env },
      timeout: timeoutMs,
      maxBuffer: 32 * 1024 * 1024,
    });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number | string; message: string };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? e.message, code: typeof e.code === 'number' ? e.code : 1 };
  }
}

/** podman's stdout, trimmed; a failure throws with podman's own message. */
export async function podman(...args: string[]): Promise<string> {
  const r = await command('podman', args);
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/** Why containers cannot be tested here, or undefined when podman and the image are present. */
export async function missing(tools: readonly string[] = ['podman']): Promise<string | undefined> {
  for (const tool of tools) {
    if ((await command(tool, ['--version'])).code !== 0)
      return `${tool} is not installed (.ci/run installs it with ../shared/containers/stand-in-images.sh)`;
  }
  if ((await command('podman', ['image', 'exists', IMAGE])).code !== 0) {
    return `the image ${IMAGE} is not built (podman build --pull=never --format docker -t ${IMAGE} .; .ci/run builds it)`;
  }
  return undefined;
}

/** In CI a missing tool or image fails (never a silent skip); elsewhere the suite is skipped, saying why. */
export async function requireContainers(ctx: Mocha.Context, tools?: readonly string[]): Promise<void> {
  const why = await missing(tools);
  if (why === undefined) return;
  if (process.env.CI !== undefined && process.env.CI !== '') throw new Error(`container tests cannot run in CI: ${why}`);
  process.stderr.write(`\n  skipped (${ctx.test?.parent?.title ?? 'container tests'}): ${why}\n`);
  ctx.skip();
}

/** The host port (on 127.0.0.1) that a container's port is published on. */
export async function hostPort(container: string, port: number): Promise<number> {
  const out = await podman('port', container, `${port}/tcp`);
  const m = /:(\d+)\s*$/.exec(out.split('\n')[0] ?? '');
  if (m === null) throw new Error(`container ${container} does not publish ${port}: ${out}`);
  return Number(m[1]);
}

/** A container's output so far, for failure messages. */
export async function logsOf(container: string, lines = 40): Promise<string> {
  const r = await command('podman', ['logs', '--tail', String(lines), container]);
  return `${r.stdout}${r.stderr}`;
}
