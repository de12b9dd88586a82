// A cap on the connections one client address holds open on a listener, so one
// client cannot take every connection slot (or every socket the process may open). A
// connection over the cap is closed at once, before a byte of it is read. The address
// is the peer's: behind a load balancer every client shares its address, so raise the
// cap there or set it to 0 (off).

import type { Server as NetServer, Socket } from 'node:net';

export class ClientConnections {
  private readonly open = new Map<string, number>();

  constructor(private readonly cap: () => number) {}

  /** Count the listener's connections per address and refuse those over the cap. */
  attach(server: NetServer): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  /** True when the connection may stay; a refused one is destroyed. */
  admit(socket: Socket): boolean {
    const cap = this.cap();
    const address = socket.remoteAddress ?? '';
    const count = this.open.get(address) ?? 0;
    if (cap > 0 && count >= cap) {
      socket.destroy();
      return false;
    }
    this.open.set(address, count + 1);
    socket.once('close', () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    });
    return true;
  }

  /** Connections open from an address (tests and metrics). */
  of(address: string): number {
    return this.open.get(address) ?? 0;
  }
}
