// Who is asking and where, with and without a trusted proxy in front.

import { expect } from 'chai';
import type { Context } from 'koa';
import { allowedOrigins, clientAddress, servedOverHttps } from '../../../../src/admin/dashboard/request-info.js';

function ctx(
  headers: Record<string, string>,
  socket: { remoteAddress?: string; encrypted?: boolean } = { remoteAddress: '10.0.0.9' },
): Context {
  return { req: { headers, socket } } as unknown as Context;
}

describe('dashboard request info', () => {
  it('takes the socket’s address, or behind a trusted proxy the address the proxy added last', () => {
    const forged = ctx({ 'x-forwarded-for': '1.2.3.4, 203.0.113.7' });
    expect(clientAddress(forged, false)).to.equal('10.0.0.9');
    expect(clientAddress(forged, true)).to.equal('203.0.113.7');
    expect(clientAddress(ctx({}), true)).to.equal('10.0.0.9');
  });

  it('knows the origin the browser used, and when cookies must be Secure', () => {
    const direct = ctx({ host: '127.0.0.1:8081' });
    expect(allowedOrigins(direct, false, undefined)).to.deep.equal(['http://127.0.0.1:8081']);
    expect(allowedOrigins(direct, false, 'https://dash.example.com')).to.deep.equal(['http://127.0.0.1:8081', 'https://dash.example.com']);
    const proxied = ctx({ host: '10.0.0.2:8082', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'Dash.Example.com' });
    expect(allowedOrigins(proxied, true, undefined)).to.deep.equal(['https://dash.example.com']);
    expect(allowedOrigins(proxied, false, undefined)).to.deep.equal(['http://10.0.0.2:8082']);
    expect(servedOverHttps(proxied, true, undefined)).to.equal(true);
    expect(servedOverHttps(proxied, false, undefined)).to.equal(false);
    expect(servedOverHttps(direct, false, 'https://dash.example.com')).to.equal(true);
    expect(servedOverHttps(ctx({ host: 'x' }, { encrypted: true }), false, undefined)).to.equal(true);
  });
});
