// The one error catalogue. Every refusal the gateway makes is a GatewayError with a
// stable code; the table below maps each code to its HTTP status, JSON-RPC code and
// gRPC status code (DESIGN.md "Errors", mirrored in docs/errors.md). Messages here are what clients see:
// internal details stay in `cause` and the log, never in an answer.

export const ERRORS = {
  PARSE_ERROR: { status: 400, rpc: -32700, grpc: 3, message: 'Parse error: body is not valid JSON' },
  INVALID_REQUEST: { status: 400, rpc: -32600, grpc: 3, message: 'Invalid request' },
  MISSING_KEY: { status: 401, rpc: -32016, grpc: 16, message: 'API key required: send header "apikey" or query "?apikey="' },
  CONFLICTING_KEYS: { status: 401, rpc: -32016, grpc: 16, message: 'Two different API keys in one request' },
  INVALID_KEY: { status: 401, rpc: -32016, grpc: 16, message: 'Invalid API key' },
  FORBIDDEN: { status: 403, rpc: -32004, grpc: 7, message: 'API key not permitted for this call' },
  METHOD_NOT_FOUND: { status: 200, rpc: -32601, grpc: 12, message: 'Method not found' },
  INVALID_PARAMS: { status: 200, rpc: -32602, grpc: 3, message: 'Invalid params' },
  ENDPOINT_NOT_FOUND: { status: 404, rpc: -32601, grpc: 12, message: 'No chain endpoint at this address' },
  HTTP_METHOD_NOT_ALLOWED: { status: 405, rpc: -32600, grpc: 12, message: 'HTTP method not allowed on this endpoint' },
  RATE_LIMITED: { status: 429, rpc: -32005, grpc: 8, message: 'Rate limit exceeded' },
  QUOTA_EXCEEDED: { status: 429, rpc: -32005, grpc: 8, message: 'Quota exceeded for this period' },
  TOO_MANY_CONNECTIONS: { status: 429, rpc: -32005, grpc: 8, message: "WebSocket connections of this key are at its tier's limit" },
  TOO_MANY_SUBSCRIPTIONS: { status: 429, rpc: -32005, grpc: 8, message: "Subscriptions on this connection are at the tier's limit" },
  // Answered like a provider's "query returned more than 10000 results": the call must be made smaller, not retried.
  NODE_BUDGET_EXCEEDED: { status: 200, rpc: -32005, grpc: 8, message: 'This call needs more node calls than one call may make' },
  BODY_TOO_LARGE: { status: 413, rpc: -32600, grpc: 8, message: 'Request body too large' },
  BATCH_TOO_LARGE: { status: 413, rpc: -32600, grpc: 8, message: 'Batch too large for this tier' },
  HEADERS_TOO_LARGE: { status: 431, rpc: -32600, grpc: 8, message: 'Request headers too large' },
  NO_HEALTHY_NODE: { status: 503, rpc: -32603, grpc: 14, message: 'No healthy node can serve this call' },
  UPSTREAM_FAILED: { status: 502, rpc: -32603, grpc: 14, message: 'Upstream nodes failed to answer' },
  NODES_DISAGREE: { status: 502, rpc: -32603, grpc: 14, message: 'nodes disagree' },
  UPSTREAM_TIMEOUT: { status: 504, rpc: -32603, grpc: 4, message: 'Upstream nodes timed out' },
  UNAVAILABLE: { status: 503, rpc: -32603, grpc: 14, message: 'Service unavailable' },
} as const satisfies Record<string, { status: number; rpc: number; grpc: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly rpcCode: number;
  /** gRPC status code (3 INVALID_ARGUMENT, 16 UNAUTHENTICATED, 14 UNAVAILABLE, …). */
  readonly grpcCode: number;
  /** Extra response headers (Retry-After, RateLimit-*). */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, options: { message?: string; cause?: unknown; headers?: Record<string, string> } = {}) {
    const entry = ERRORS[code];
    super(options.message ?? entry.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = entry.status;
    this.rpcCode = entry.rpc;
    this.grpcCode = entry.grpc;
    this.headers = options.headers;
  }
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}
