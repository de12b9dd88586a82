// The gateway's logger: the caller's, else JSON lines to log.file or stdout. A cluster's
// worker writes a file of its own beside the configured one, so one writer rotates each.

import type { GatewayConfig } from '../config/types.js';
import { createLogger, type Logger } from '../ops/log.js';
import { RotatingFile } from '../ops/log-file.js';

export interface Logging {
  readonly logger: Logger;
  /** The log file opened here (log.file), closed last; undefined when the caller gave the logger or logs go to stdout. */
  readonly file: RotatingFile | undefined;
}

export async function openLogging(config: GatewayConfig, given: Logger | undefined, worker: number | undefined): Promise<Logging> {
  if (given !== undefined) return { logger: given, file: undefined };
  const path = config.log.file === undefined || worker === undefined ? config.log.file : workerLogPath(config.log.file, worker);
  const file = path === undefined ? undefined : await RotatingFile.open(path, config.log.maxBytes, config.log.files);
  return { logger: createLogger(config.log.level, file ?? process.stdout, { batchMs: 100, worker }), file };
}

/** A worker's own log file beside the configured one (`gateway.log` → `gateway.worker-0.log`). */
function workerLogPath(file: string, worker: number): string {
  const dot = file.lastIndexOf('.');
  return dot > file.lastIndexOf('/') ? `${file.slice(0, dot)}.worker-${worker}${file.slice(dot)}` : `${file}.worker-${worker}`;
}

/** A cluster's worker slot (0..workers-1), as its primary forked it. */
export function workerIndex(): number | undefined {
  const n = Number(process.env.NODEROUTER_WORKER);
  return Number.isInteger(n) ? n : undefined;
}
