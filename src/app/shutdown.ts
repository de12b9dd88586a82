// How a gateway stops: SIGTERM's wait with readiness 503 (shutdown), then the listeners
// stop accepting, what was received is answered with `connection: close`, idle
// connections are let go and whatever is left at server.shutdownTimeoutMs is cut; then
// nodes, holds and tracing close, usage history writes its last rollups, the store
// closes (usage flushed), the admin listener last so readiness stays visible
// meanwhile, and the log after everything else.

import type { Server } from 'node:http';
import { closeChainRuntime } from '../chain/runtime.js';
import type { ServerConfig } from '../config/types.js';
import type { GrpcListener } from '../transports/grpc/listener.js';
import { closeServer, drainConnections, OpenConnections, stopAccepting } from '../transports/shared/listeners.js';
import type { Logger } from '../ops/log.js';
import type { RotatingFile } from '../ops/log-file.js';
import type { Tracing } from '../ops/trace/tracing.js';
import type { CoreParts } from './parts.js';
import type { TrafficListener } from './traffic.js';

/** What is closed, read when the close begins. */
export interface ClosingParts {
  readonly traffic: TrafficListener | undefined;
  readonly grpc: GrpcListener | undefined;
  /** The admin listener, then the dashboard's own. */
  readonly admin: readonly Server[];
  readonly core: CoreParts;
  readonly tracing: Tracing;
  readonly logger: Logger;
  readonly logFile: RotatingFile | undefined;
  readonly limits: () => ServerConfig;
}

export class Shutdown {
  /** The listeners stopped accepting: every answer closes its connection. */
  stopping = false;
  /** The traffic listener's connections, closed one by one when it is safe (drainConnections). */
  readonly open = new OpenConnections();
  /** The traffic listener closed (stopAccepting); settles when its last connection is gone. */
  private unlistened: Promise<void> | undefined;
  /** The wait of shutdown() before close(), and how to end it early. */
  private delaying: Promise<void> | undefined;
  private endDelay: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly parts: () => ClosingParts,
    /** Readiness turns 503. */
    private readonly draining: () => void,
  ) {}

  /** Readiness 503 at once, every listener serving as before for `delayMs`; then close(). */
  shutdown(delayMs: number): Promise<void> {
    if (this.closing === undefined && this.delaying === undefined) {
      this.draining();
      this.parts().logger.info('draining: readiness is 503, requests are still served', { event: 'drain', delayMs });
      this.delaying = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        this.endDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return (this.delaying ?? Promise.resolve()).then(() => this.close());
  }

  close(): Promise<void> {
    this.endDelay?.();
    this.closing ??= this.doClose();
    return this.closing;
  }

  /** Close the traffic listener's socket and nothing else: connections already accepted are served as before. */
  stopAccepting(): void {
    const server = this.parts().traffic?.server;
    if (server !== undefined) this.unlistened ??= stopAccepting(server);
  }

  private async doClose(): Promise<void> {
    const p = this.parts();
    this.draining();
    // Closed before the first answer that says `connection: close`, in the same tick.
    this.stopAccepting();
    this.stopping = true;
    const { shutdownTimeoutMs: timeoutMs, shutdownIdleMs } = p.limits();
    const stopWatch = drainConnections(this.open, Math.min(shutdownIdleMs, timeoutMs));
    const cut = setTimeout(() => {
      p.traffic?.server.closeAllConnections();
      for (const socket of this.open.sockets) socket.destroy();
    }, timeoutMs);
    const grpcClosed = p.grpc?.close(timeoutMs);
    // WebSocket clients are told first (1001), so the listener's close does not wait on them.
    await p.traffic?.ws.close();
    await this.unlistened;
    stopWatch();
    clearTimeout(cut);
    await grpcClosed;
    await Promise.all(p.core.chains.all.map((c) => closeChainRuntime(c)));
    p.core.holds.close();
    await p.tracing.shutdown();
    await p.core.usage?.close();
    await p.core.services.bundle.close();
    for (const server of [...p.admin].reverse()) {
      server.closeAllConnections();
      await closeServer(server);
    }
    p.logger.info('gateway stopped', { event: 'stop' });
    await p.logger.flush();
    await p.logFile?.close();
  }
}
