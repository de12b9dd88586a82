// The control plane's error catalogue: every refusal of the admin API, the dashboard
// API and the CLI is one of these codes, with one HTTP status and one exit code, so an
// operator's script reads the same code whichever door it came through. The data
// plane's table is src/errors.ts; this one is for people and tools managing the gateway.

export const CONTROL_ERRORS = {
  /** A field, argument or body the operation does not take (`field` names it when known). */
  INVALID_INPUT: { status: 400, exit: 2 },
  /** A request body that is not JSON. */
  INVALID_JSON: { status: 400, exit: 2 },
  /** The admin token is missing or wrong. */
  UNAUTHORIZED: { status: 401, exit: 2 },
  /** A dashboard sign-in with a wrong admin token or a spent sign-in link. */
  SIGNIN_FAILED: { status: 401, exit: 2 },
  /** No dashboard session, or it has ended. */
  UNAUTHENTICATED: { status: 401, exit: 2 },
  /** A dashboard write without the session's CSRF token or from another origin. */
  CSRF_REFUSED: { status: 403, exit: 2 },
  /** No such route or page. */
  NOT_FOUND: { status: 404, exit: 2 },
  KEY_NOT_FOUND: { status: 404, exit: 2 },
  ACCOUNT_NOT_FOUND: { status: 404, exit: 2 },
  NODE_NOT_FOUND: { status: 404, exit: 2 },
  /** The operator view of the dashboard without an admin token configured. */
  OPERATOR_CLOSED: { status: 404, exit: 2 },
  /** An account name taken (names are never reused). */
  ACCOUNT_EXISTS: { status: 409, exit: 2 },
  /** Rows being imported or adopted differ from what the record holds: nothing written (`--force` replaces them). */
  RECORD_CONFLICT: { status: 409, exit: 2 },
  BODY_TOO_LARGE: { status: 413, exit: 2 },
  /** Key changes paced per account (`Retry-After`). */
  TOO_MANY_KEY_CHANGES: { status: 429, exit: 2 },
  /** Failed sign-ins paced per address (`Retry-After`). */
  TOO_MANY_ATTEMPTS: { status: 429, exit: 2 },
  /** The store did not take a change: nothing changed, try again (`Retry-After`). */
  STORE_UNAVAILABLE: { status: 503, exit: 1 },
  /** The gateway cannot answer now (the admin API out of reach, for the CLI). */
  UNAVAILABLE: { status: 503, exit: 1 },
} as const satisfies Record<string, { readonly status: number; readonly exit: 1 | 2 }>;

export type ControlCode = keyof typeof CONTROL_ERRORS;

export interface ControlErrorOptions {
  /** The input field at fault (`origins`, `ips` …), so a form can show the message beside it. */
  readonly field?: string;
  /** Seconds until trying again makes sense (sent as `Retry-After`). */
  readonly retryAfter?: number;
}

/** A refusal of the control plane: the caller's mistake or a passing condition, never a 500. */
export class ControlError extends Error {
  readonly field: string | undefined;
  readonly retryAfter: number | undefined;

  constructor(
    readonly code: ControlCode,
    message: string,
    options: ControlErrorOptions = {},
  ) {
    super(message);
    this.name = 'ControlError';
    this.field = options.field;
    this.retryAfter = options.retryAfter;
  }

  get status(): number {
    return CONTROL_ERRORS[this.code].status;
  }

  /** The CLI's exit code: 2 the caller's mistake, 1 the gateway's or the store's. */
  get exit(): 1 | 2 {
    return CONTROL_ERRORS[this.code].exit;
  }
}

export function isControlCode(code: unknown): code is ControlCode {
  return typeof code === 'string' && Object.hasOwn(CONTROL_ERRORS, code);
}
