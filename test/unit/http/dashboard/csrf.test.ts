// The CSRF checks on their own: same-origin by Origin and Sec-Fetch-Site, and the
// session's token in x-csrf-token.

import { expect } from 'chai';
import { checkOrigin, checkToken } from '../../../../src/admin/dashboard/csrf.js';

const ALLOWED = ['http://127.0.0.1:8081', 'https://dash.example.com'];

describe('dashboard CSRF checks', () => {
  it('accepts the dashboard’s own origins', () => {
    expect(checkOrigin({ origin: 'http://127.0.0.1:8081' }, ALLOWED).ok).to.equal(true);
    expect(checkOrigin({ origin: 'https://DASH.example.com' }, ALLOWED).ok).to.equal(true);
    expect(checkOrigin({ origin: 'https://dash.example.com', 'sec-fetch-site': 'same-origin' }, ALLOWED).ok).to.equal(true);
    // A browser that sends only Sec-Fetch-Site.
    expect(checkOrigin({ 'sec-fetch-site': 'same-origin' }, ALLOWED).ok).to.equal(true);
  });

  it('refuses other origins, other sites, and requests that say nothing', () => {
    const refused = [
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { origin: 'http://127.0.0.1:8082' },
      { origin: 'https://dash.example.com', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'none' },
      {},
    ];
    for (const headers of refused) {
      const v = checkOrigin(headers, ALLOWED);
      expect(v.ok, JSON.stringify(headers)).to.equal(false);
      if (!v.ok) expect(v.message).to.match(/refused/);
    }
  });

  it('needs the session’s token, exactly', () => {
    const token = 'Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5';
    expect(checkToken({ 'x-csrf-token': token }, token).ok).to.equal(true);
    for (const given of [undefined, '', token.slice(1), `${token}x`, token.toUpperCase()]) {
      const v = checkToken(given === undefined ? {} : { 'x-csrf-token': given }, token);
      expect(v.ok, String(given)).to.equal(false);
    }
    const missing = checkToken({}, token);
    expect(!missing.ok && missing.message).to.equal("missing CSRF token: send the session's token in x-csrf-token");
  });
});
