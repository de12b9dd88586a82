// The per-request check of key restrictions: the client's address behind trusted
// proxies (X-Forwarded-For, read from the right past server.trustedProxies), which restriction applies on which
// transport, missing headers refused, refusals naming the restriction (never echoing
// client text that is not an address), and the contracts a call names; and the CORS
// pieces (origins per endpoint, preflight headers).

import { expect } from 'chai';
import type { KeyRecord } from '../../../src/auth/key-store.js';
import { compiledRestrictions, type KeyRestrictions } from '../../../src/auth/restrictions.js';
import { clientAddress, TrustedProxies } from '../../../src/exec/client-address.js';
import { clientFacts, clientRefusal, contractRefusal, type ClientFacts } from '../../../src/exec/restrict.js';
import { corsPolicy, isPreflight, preflightHeaders } from '../../../src/transports/shared/cors.js';

const key = { id: 'key_1', prefix: 'nrk_Test' } as KeyRecord;
const facts = (over: Partial<ClientFacts> = {}): ClientFacts => ({
  origin: 'https://app.example.com',
  referer: 'https://app.example.com/page',
  userAgent: 'Mozilla/5.0 MyApp/1.2',
  address: '203.0.113.7',
  ...over,
});
const refusal = (r: KeyRestrictions, f: ClientFacts, transport: 'http' | 'ws' | 'grpc' = 'http') => {
  const e = clientRefusal(key, compiledRestrictions(r), f, transport);
  return e === undefined ? undefined : { reason: e.reason, message: e.message, code: e.code, status: e.status };
};

describe('key restrictions on a request', () => {
  describe('the client address', () => {
    const none = new TrustedProxies([]);
    const lb = new TrustedProxies(['10.0.0.0/8']);
    const two = new TrustedProxies(['10.0.0.0/8', '172.16.0.0/12']);

    it('is the peer without trusted proxies, or when the peer is not one, whatever X-Forwarded-For says', () => {
      expect(clientAddress('10.0.0.5', '198.51.100.1', none)).to.equal('10.0.0.5');
      expect(clientAddress('192.0.2.9', '198.51.100.1', lb)).to.equal('192.0.2.9');
      expect(clientAddress('10.0.0.5', undefined, lb)).to.equal('10.0.0.5');
    });

    it('is the right-most entry that is not a trusted proxy; entries further left are the client’s own and ignored', () => {
      // Client 198.51.100.1 sent a forged entry; the load balancer appended what it saw.
      expect(clientAddress('10.0.0.5', '6.6.6.6, 198.51.100.1', lb)).to.equal('198.51.100.1');
      // Two proxies: the CDN appended the client, the load balancer the CDN.
      expect(clientAddress('10.0.0.5', '6.6.6.6, 198.51.100.1, 172.16.0.9', two)).to.equal('198.51.100.1');
      // Repeated headers are one list, in order.
      expect(clientAddress('10.0.0.5', ['6.6.6.6', '198.51.100.1, 172.16.0.9'], two)).to.equal('198.51.100.1');
    });

    it('drops the brackets and ports some proxies write, and stops at an entry that is no address', () => {
      expect(clientAddress('10.0.0.5', '198.51.100.1:4711', lb)).to.equal('198.51.100.1');
      expect(clientAddress('10.0.0.5', '[2001:db8::7]:443', lb)).to.equal('2001:db8::7');
      expect(clientAddress('10.0.0.5', '2001:db8::7', lb)).to.equal('2001:db8::7');
      expect(clientAddress('10.0.0.5', 'a, ', lb)).to.equal('10.0.0.5');
    });

    it('reads Origin, Referer and User-Agent only when sent once', () => {
      const f = clientFacts(
        {
          headers: {
            origin: 'https://a.example.com',
            referer: 'https://a.example.com/',
            'user-agent': 'UA',
            'x-forwarded-for': '198.51.100.1',
          },
          socket: { remoteAddress: '::ffff:10.0.0.5' },
        },
        new TrustedProxies(['10.0.0.5']),
      );
      expect(f).to.deep.equal({
        origin: 'https://a.example.com',
        referer: 'https://a.example.com/',
        userAgent: 'UA',
        address: '198.51.100.1',
      });
      const h2 = clientFacts(
        { headers: { origin: ['https://a.example.com', 'https://b.example.com'] } as never, socket: undefined },
        new TrustedProxies([]),
      );
      expect(h2.origin).to.equal(undefined);
      expect(h2.address).to.equal(undefined);
    });
  });

  describe('which restriction refuses', () => {
    it('lets an allowed client through on every transport', () => {
      const r = {
        origins: ['https://app.example.com'],
        referrers: ['https://app.example.com/'],
        ips: ['203.0.113.0/24'],
        userAgents: ['*MyApp/*'],
      };
      for (const t of ['http', 'ws', 'grpc'] as const) expect(refusal(r, facts(), t), t).to.equal(undefined);
    });

    it('refuses another origin, and a request without one, on HTTP and WebSocket; gRPC has no browsers', () => {
      const r = { origins: ['https://app.example.com'] };
      expect(refusal(r, facts({ origin: 'https://evil.example' }))).to.deep.equal({
        reason: 'origin',
        message: 'API key not permitted from this origin',
        code: 'FORBIDDEN',
        status: 403,
      });
      expect(refusal(r, facts({ origin: undefined }), 'ws')?.message).to.match(/has no Origin header/);
      expect(refusal(r, facts({ origin: 'https://evil.example' }), 'grpc')).to.equal(undefined);
    });

    it('refuses another page or none on HTTP only (browsers send no Referer on WebSocket handshakes)', () => {
      const r = { referrers: ['https://app.example.com/shop/'] };
      expect(refusal(r, facts())?.reason).to.equal('referrer');
      expect(refusal(r, facts({ referer: undefined }))?.message).to.match(/no Referer header/);
      expect(refusal(r, facts({ referer: 'https://app.example.com/shop/cart' }))).to.equal(undefined);
      expect(refusal(r, facts(), 'ws')).to.equal(undefined);
      expect(refusal(r, facts(), 'grpc')).to.equal(undefined);
    });

    it('refuses other addresses on every transport, naming the address only when it is one', () => {
      const r = { ips: ['10.0.0.0/8', '2001:db8::/32'] };
      for (const t of ['http', 'ws', 'grpc'] as const) {
        expect(refusal(r, facts(), t)).to.deep.include({ reason: 'ip', message: 'API key not permitted from address 203.0.113.7' });
      }
      expect(refusal(r, facts({ address: '2001:db8::1' }))).to.equal(undefined);
      expect(refusal(r, facts({ address: '<script>' }))?.message).to.equal(
        'API key restricted to certain addresses: the client address could not be read',
      );
    });

    it('refuses other user agents and none on every transport', () => {
      const r = { userAgents: ['grpc-node-js/*', '*MyApp/*'] };
      expect(refusal(r, facts({ userAgent: 'curl/8.0' }), 'grpc')?.reason).to.equal('user_agent');
      expect(refusal(r, facts({ userAgent: undefined }))?.reason).to.equal('user_agent');
      expect(refusal(r, facts({ userAgent: 'grpc-node-js/1.14.0' }), 'grpc')).to.equal(undefined);
    });

    it('refuses a call to a contract not listed, or one that names none', () => {
      const allowed = new Set(['0x5fbdb2315678afecb367f032d93f642f64180aa3']);
      expect(contractRefusal(key, allowed, ['0x5fbdb2315678afecb367f032d93f642f64180aa3'])).to.equal(undefined);
      expect(
        contractRefusal(key, allowed, ['0x5fbdb2315678afecb367f032d93f642f64180aa3', '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512'])
          ?.message,
      ).to.equal('API key not permitted to call contract 0xe7f1725e7734ce288f8367e1bb143e90bb3f0512');
      expect(contractRefusal(key, allowed, ['"<b>"'])?.message).to.equal('API key not permitted to call this contract');
      expect(contractRefusal(key, allowed, [])).to.deep.include({ reason: 'contract', code: 'FORBIDDEN' });
    });
  });

  describe('CORS', () => {
    it('answers the origins of its list, compiled once per list', () => {
      const list = ['https://app.example.com', 'https://*.example.org'];
      expect(corsPolicy(list)).to.equal(corsPolicy(list));
      expect(corsPolicy(list).matches('https://a.example.org')).to.equal(true);
      expect(corsPolicy(list).matches('https://other.example')).to.equal(false);
      expect(corsPolicy(['*']).matches('https://other.example')).to.equal(true);
    });

    it('tells a preflight from other OPTIONS requests', () => {
      expect(isPreflight('OPTIONS', 'POST')).to.equal(true);
      expect(isPreflight('OPTIONS', undefined)).to.equal(false);
      expect(isPreflight('POST', 'POST')).to.equal(false);
    });

    it('allows the key header, JSON and the safe headers a preflight asks for, nothing else', () => {
      const h = preflightHeaders(
        'https://app.example.com',
        'Content-Type, APIKEY, x-request-id, cookie, x-evil, accept-language, accept',
        undefined,
        600,
      );
      const get = (name: string): string | undefined => h[h.indexOf(name) + 1];
      expect(get('access-control-allow-origin')).to.equal('https://app.example.com');
      expect(get('access-control-allow-methods')).to.equal('GET, POST');
      expect(get('access-control-allow-headers')).to.equal('apikey, content-type, x-request-id, accept-language, accept');
      expect(get('access-control-max-age')).to.equal('600');
      expect(h).to.not.include('access-control-allow-credentials');
      expect(h).to.not.include('access-control-allow-private-network');
      const pna = preflightHeaders('https://app.example.com', undefined, 'true', 600);
      expect(pna[pna.indexOf('access-control-allow-private-network') + 1]).to.equal('true');
      expect(pna[pna.indexOf('access-control-allow-headers') + 1]).to.equal('apikey, content-type');
    });

    it('allows the request headers the endpoint’s plugin declares, and those of no other family', () => {
      const asked = 'content-type, apikey, x-cosmos-block-height, client-sdk-type';
      const allowed = (family: readonly string[]): string | undefined => {
        const h = preflightHeaders('https://app.example.com', asked, undefined, 600, family);
        return h[h.indexOf('access-control-allow-headers') + 1];
      };
      expect(allowed(['x-cosmos-block-height'])).to.equal('apikey, content-type, x-cosmos-block-height');
      expect(allowed(['client-sdk-type', 'client-sdk-version'])).to.equal('apikey, content-type, client-sdk-type');
      expect(allowed([])).to.equal('apikey, content-type');
    });
  });
});
