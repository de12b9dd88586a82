// JSON-lines logging: one object per line with time, level and message fields.
// Callers pass only non-secret fields (a key appears as its id or prefix, never its
// value). Lines are gathered and written once per event-loop turn: stdout to a file
// or /dev/null is written synchronously by Node, and a write per request cost more
// than the request (measured with npm run bench and --cpu-prof).

import type { LogLevel } from './config/types.js';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export type LogFields = Record<string, string | number | boolean | undefined | null>;

export interface Logger {
  level: LogLevel;
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** Lines still gathered when the process exits are written then (one handler for all loggers). */
const flushers = new Set<() => void>();
process.once('exit', () => {
  for (const f of flushers) f();
});

export function createLogger(level: LogLevel, out: { write(s: string): unknown } = process.stdout): Logger {
  let pending = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const text = pending;
    pending = '';
    if (text !== '') out.write(text);
  };
  flushers.add(flush);
  const write = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields): void => {
    if (ORDER[lvl] < ORDER[logger.level]) return;
    pending += `${JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields })}\n`;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  const logger: Logger = {
    level,
    enabled: (lvl) => ORDER[lvl] >= ORDER[logger.level],
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
  return logger;
}

export const silentLogger: Logger = createLogger('silent');
