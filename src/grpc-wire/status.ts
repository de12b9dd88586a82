// gRPC status on the wire: code names, the percent-encoding of grpc-message, the
// grpc-timeout header, and the trailers-only answer the gateway's own refusals take
// (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md).

import { constants, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { GatewayError } from '../errors.js';

const NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

export function grpcCodeName(code: number): string {
  return NAMES[code] ?? `CODE_${code}`;
}

/** grpc-message: bytes outside printable ASCII, and '%', are percent-encoded (UTF-8). */
export function encodeGrpcMessage(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeGrpcMessage(value: unknown): string {
  if (typeof value !== 'string') return '';
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

const TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };

/** Milliseconds of a grpc-timeout header ("5S", "250m"); undefined when absent or malformed. */
export function parseGrpcTimeout(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TIMEOUT.exec(value);
  if (m === null) return undefined;
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number);
}

/** A grpc-timeout value for a number of milliseconds (at most 8 digits, as the spec says). */
export function formatGrpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  return whole < 1e8 ? `${whole}m` : `${Math.ceil(whole / 1000)}S`;
}

/** The status of a call, read from trailers or a trailers-only answer; undefined when none. */
export function statusOf(headers: Readonly<Record<string, unknown>>): { code: number; message: string } | undefined {
  const raw = headers['grpc-status'];
  if (typeof raw !== 'string' || !/^\d{1,2}$/.test(raw)) return undefined;
  return { code: Number(raw), message: decodeGrpcMessage(headers['grpc-message']) };
}

/** Status trailers for a code and message (plus extra metadata, e.g. retry-after). */
export function statusTrailers(code: number, message: string, extra?: Readonly<Record<string, string>>): OutgoingHttpHeaders {
  const t: OutgoingHttpHeaders = { ...extra, 'grpc-status': String(code) };
  if (message !== '') t['grpc-message'] = encodeGrpcMessage(message);
  return t;
}

/** A trailers-only answer (headers and status in one HEADERS frame) for a gateway refusal. */
export function refusalHeaders(err: GatewayError, extra?: Readonly<Record<string, string>>): OutgoingHttpHeaders {
  return { ':status': 200, 'content-type': 'application/grpc', ...statusTrailers(err.grpcCode, err.message, { ...err.headers, ...extra }) };
}

/** Answer a refusal as a trailers-only response; ask the client to stop sending (RST_STREAM NO_ERROR). */
export function refuse(stream: ServerHttp2Stream, err: GatewayError, extra?: Readonly<Record<string, string>>): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(refusalHeaders(err, extra), { endStream: true });
  if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
}
