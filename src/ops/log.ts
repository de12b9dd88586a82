// JSON-lines logging: one object per line with time, level and message fields.
// Callers pass only non-secret fields (a key appears as its id or prefix, never its
// value). Lines are gathered and written in batches: stdout to a file or a pipe is
// written synchronously by Node, and a write per request cost more than the request
// (measured with npm run bench and callgrind). A batch goes out when it is `batchMs`
// old or 64 KiB long, at once for warnings and errors, and at exit.

import type { LogLevel } from '../config/types.js';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export type LogFields = Record<string, string | number | boolean | undefined | null>;

/** The fields of one request's line (info level), in the order they are written. */
export interface RequestLogFields {
  readonly requestId: string;
  /** Absent for HTTP, the most common transport. */
  readonly transport?: string;
  readonly chain: string;
  readonly method: string;
  readonly node: string | undefined;
  readonly attempts: number;
  readonly status?: number;
  readonly outcome: string;
  readonly ms: number;
  /** The key's prefix, never its value. */
  readonly key: string | undefined;
  readonly keyId: string | undefined;
  /** The client's address (an IP address: the peer's, or one a trusted proxy forwarded). */
  readonly client?: string;
  /** The client's User-Agent, cut to USER_AGENT_MAX characters. */
  readonly userAgent?: string;
  /** Bytes of the request body (a WebSocket or gRPC message) read, and of the answer body sent. */
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** The response cache's part: every call answered from it (hit) or not (miss); absent when nothing was cacheable. */
  readonly cache?: 'hit' | 'miss';
  /** The W3C trace id of the request (32 hex digits), when it has one. */
  readonly traceId?: string;
}

/** A longer User-Agent is cut: a 16 KiB header must not make a 16 KiB log line. */
export const USER_AGENT_MAX = 256;

export interface Logger {
  level: LogLevel;
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** One request's line at info level, written without building an object per request. */
  request(fields: RequestLogFields): void;
  /** Write every gathered line now; settles once the output has taken them. */
  flush(): Promise<void>;
}

/** Where a logger writes: a stream, or a file that also says when what it took is written. */
export interface LogOutput {
  write(s: string): unknown;
  flush?(): Promise<void>;
}

// Only quotes, backslashes, control characters and lone surrogates need JSON escaping;
// the fields of a request line (names, labels, ids) almost never hold any.
// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const str = (s: string): string => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

let lastMs = 0;
let lastIso = '';
/** The time of a line; one Date per millisecond, not per line. */
function isoNow(): string {
  const t = Date.now();
  if (t !== lastMs) {
    lastMs = t;
    lastIso = new Date(t).toISOString();
  }
  return lastIso;
}

/**
 * Request ids (checked on arrival, or generated), chain and node names (checked by the
 * config), outcomes, transports, key prefixes and ids (ours), client addresses (IP
 * addresses), cache results and trace ids (checked hex) never need escaping; method
 * labels come from plugins and user agents from clients, so they are checked.
 */
function requestLine(f: RequestLogFields): string {
  return (
    `{"time":"${isoNow()}","level":"info","msg":"request","requestId":"${f.requestId}"` +
    `${f.transport === undefined ? '' : `,"transport":"${f.transport}"`},"chain":"${f.chain}","method":${str(f.method)}` +
    `${f.node === undefined ? '' : `,"node":"${f.node}"`},"attempts":${f.attempts}${f.status === undefined ? '' : `,"status":${f.status}`}` +
    `,"outcome":"${f.outcome}","ms":${f.ms}${f.key === undefined ? '' : `,"key":"${f.key}","keyId":"${f.keyId}"`}` +
    `${f.client === undefined ? '' : `,"client":"${f.client}"`}${f.userAgent === undefined ? '' : `,"userAgent":${str(f.userAgent)}`}` +
    `,"bytesIn":${f.bytesIn},"bytesOut":${f.bytesOut}${f.cache === undefined ? '' : `,"cache":"${f.cache}"`}` +
    `${f.traceId === undefined ? '' : `,"traceId":"${f.traceId}"`}}\n`
  );
}

/** Lines still gathered when the process exits are written then (one handler for all loggers). */
const flushers = new Set<() => void>();
process.once('exit', () => {
  for (const f of flushers) f();
});

const MAX_BATCH = 64 * 1024;

export interface LoggerOptions {
  /**
   * How long lines may wait to be written together; 0 writes once per event-loop
   * turn. The gateway's own log waits up to 100 ms.
   */
  readonly batchMs?: number;
  /** A cluster's worker (0..workers-1): every line says which worker wrote it. */
  readonly worker?: number;
}

export function createLogger(level: LogLevel, out: LogOutput = process.stdout, options: LoggerOptions = {}): Logger {
  const batchMs = options.batchMs ?? 0;
  const worker = options.worker;
  const tagged = worker === undefined ? undefined : `{"worker":${worker},`;
  let pending = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const text = pending;
    pending = '';
    if (text !== '') out.write(text);
  };
  flushers.add(flush);
  const append = (line: string, now: boolean): void => {
    pending += line;
    if (now || pending.length > MAX_BATCH) flush();
    else if (!scheduled) {
      scheduled = true;
      if (batchMs === 0) setImmediate(flush);
      else setTimeout(flush, batchMs).unref();
    }
  };
  const write = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields): void => {
    if (ORDER[lvl] < ORDER[logger.level]) return;
    append(`${JSON.stringify({ time: isoNow(), level: lvl, msg, worker, ...fields })}\n`, lvl === 'warn' || lvl === 'error');
  };
  const logger: Logger = {
    level,
    enabled: (lvl) => ORDER[lvl] >= ORDER[logger.level],
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    request: (f) => {
      if (ORDER.info < ORDER[logger.level]) return;
      const line = requestLine(f);
      append(tagged === undefined ? line : tagged + line.slice(1), false);
    },
    flush: () => {
      flush();
      return out.flush?.() ?? Promise.resolve();
    },
  };
  return logger;
}

export const silentLogger: Logger = createLogger('silent');
