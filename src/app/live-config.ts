// The config in force, swapped whole by a reload. Every listener (HTTP, WebSocket,
// gRPC) reads its server limits through `limits()` when it uses them, and the client
// address through `trustedProxies()`, so a reload applies to the next connection or
// request without telling any listener.

import type { GatewayConfig, ServerConfig } from '../config/types.js';
import { TrustedProxies } from '../exec/client-address.js';

export class LiveConfig {
  private current: GatewayConfig;
  private proxies: TrustedProxies;

  constructor(config: GatewayConfig) {
    this.current = config;
    this.proxies = new TrustedProxies(config.server.trustedProxies);
  }

  get config(): GatewayConfig {
    return this.current;
  }

  /** Server limits as they are now (a bound function: listeners keep it, never its result). */
  readonly limits = (): ServerConfig => this.current.server;

  /** Proxies whose X-Forwarded-For is believed (server.trustedProxies). */
  readonly trustedProxies = (): TrustedProxies => this.proxies;

  swap(next: GatewayConfig): void {
    this.current = next;
    this.proxies = new TrustedProxies(next.server.trustedProxies);
  }
}
