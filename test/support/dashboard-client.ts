// A small client of the dashboard's JSON APIs for API-level tests: it keeps cookies
// like a browser (per client), sends the page's Origin and the session's CSRF token
// unless a test says otherwise, and records the Set-Cookie lines it received. Also
// the tiers the dashboard tests run with.

/** free: a burst of 2 (the third call at once is refused) and small quotas; growth: archive. */
export const DASHBOARD_TIERS = `
  free: { rate: 1, burst: 2, daily: 1000, monthly: 20000, maxBatch: 10, archive: false, wsConnections: 2 }
  growth: { rate: 100, burst: 200, archive: true }
  enterprise: { rate: unlimited, archive: true }
`;

export const BLOCK_NUMBER = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: Record<string, unknown>;
}

export interface RequestOptions {
  readonly body?: unknown;
  /** Origin header to send; null sends none. Defaults to the dashboard's own origin. */
  readonly origin?: string | null;
  /** CSRF token to send on changes; null sends none. Defaults to the session's. */
  readonly csrf?: string | null;
  readonly headers?: Record<string, string>;
}

export class DashboardClient {
  readonly cookies = new Map<string, string>();
  readonly setCookies: string[] = [];
  csrf = '';

  /** `origin`: the listener serving the dashboard; `api`: the account or the operator API. */
  constructor(
    readonly origin: string,
    readonly api: '/dashboard/api' | '/dashboard/operator/api' = '/dashboard/api',
  ) {}

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    const origin = options.origin === undefined ? this.origin : options.origin;
    if (origin !== null) headers.origin = origin;
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    if (method !== 'GET' && csrf !== null && csrf !== '') headers['x-csrf-token'] = csrf;
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.origin}${this.api}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      redirect: 'manual',
    });
    for (const line of res.headers.getSetCookie()) {
      this.setCookies.push(line);
      const [pair] = line.split(';');
      const eq = (pair as string).indexOf('=');
      const name = (pair as string).slice(0, eq);
      const value = (pair as string).slice(eq + 1);
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      json = {};
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  get(path: string, options?: RequestOptions): Promise<ApiResponse> {
    return this.request('GET', path, options);
  }

  post(path: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.request('POST', path, { ...options, body: body ?? options.body });
  }

  /** Sign in (a sign-in token, or the admin token on the operator API); keeps the CSRF token. */
  async signIn(token: string): Promise<ApiResponse> {
    const res = await this.post('/signin', { token });
    if (res.status === 200) this.csrf = res.json.csrfToken as string;
    return res;
  }
}

/** The error code of a `{"error":{"code","message"}}` answer. */
export function errorCode(res: ApiResponse): string | undefined {
  return (res.json.error as { code?: string } | undefined)?.code;
}
