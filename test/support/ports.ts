// Loopback ports for the rare server a test cannot start on port 0 itself (a child
// process, or a config that names its nodes' URLs): found free by listening on port 0,
// then released for the test to use.

import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The config text with every loopback node URL's port (`127.0.0.1:NNNN`) moved to a free one. */
export async function onFreePorts(text: string): Promise<string> {
  const ports = new Map<string, number>();
  for (const [, port] of text.matchAll(/127\.0\.0\.1:(\d+)/g)) if (!ports.has(port as string)) ports.set(port as string, await freePort());
  return text.replace(/127\.0\.0\.1:(\d+)/g, (_, port: string) => `127.0.0.1:${ports.get(port)}`);
}
