// A TCP proxy a test can cut and restore, to take a service (Redis) away mid-traffic
// without touching the service itself.

import { createServer, connect, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server?.listen(port, '127.0.0.1', () => resolve()));
    const addr = this.server.address();
    if (addr !== null && typeof addr === 'object') this.port = addr.port;
  }

  /** Drop every connection and refuse new ones. */
  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
    this.server = undefined;
  }

  /** Listen again on the same port. */
  restore(): Promise<void> {
    return this.start(this.port);
  }

  close(): Promise<void> {
    return this.cut();
  }
}
