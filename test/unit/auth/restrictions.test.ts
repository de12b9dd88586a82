// Key restrictions as values: addresses and CIDR ranges (IPv4, IPv6, IPv4-mapped),
// origin and referrer patterns, and the checked, canonical lists the CLI, admin API
// and dashboard store (each mistake named by its field).

import { expect } from 'chai';
import fc from 'fast-check';
import { inRange, ipBytes, parseRange } from '../../../src/auth/ip-ranges.js';
import { canonicalOrigin, canonicalReferrer, OriginMatcher, ReferrerMatcher } from '../../../src/auth/origin-patterns.js';
import { addressAllowed, compiledRestrictions, mergeRestrictions, type RestrictionField } from '../../../src/auth/restrictions.js';

const fail = (field: RestrictionField, message: string): never => {
  throw new Error(`${field}: ${message}`);
};
const merge = (input: Record<string, unknown>, base?: Parameters<typeof mergeRestrictions>[1]) => mergeRestrictions(input, base, fail);
const allowed = (ranges: string[], address: string): boolean => addressAllowed(ranges.map(parseRange), address);

describe('key restrictions', () => {
  describe('addresses and ranges', () => {
    it('reads IPv4 and IPv6 addresses into 16 bytes, IPv4 as its mapped IPv6 form', () => {
      expect([...(ipBytes('10.1.2.3') as Uint8Array)]).to.deep.equal([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 1, 2, 3]);
      expect(ipBytes('::ffff:10.1.2.3')).to.deep.equal(ipBytes('10.1.2.3'));
      expect(ipBytes('::ffff:a01:203')).to.deep.equal(ipBytes('10.1.2.3'));
      expect([...(ipBytes('2001:db8::1') as Uint8Array)]).to.deep.equal([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
      expect([...(ipBytes('::') as Uint8Array)]).to.deep.equal(new Array(16).fill(0));
      expect(ipBytes('fe80::1%eth0')).to.deep.equal(ipBytes('fe80::1'));
      for (const bad of ['', 'localhost', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1::2::3', 'g::1', '[::1]']) {
        expect(ipBytes(bad), bad).to.equal(undefined);
      }
    });

    it('reads every IPv6 address Node formats back to the same bytes', () => {
      fc.assert(
        fc.property(fc.ipV6(), (text) => {
          const bytes = ipBytes(text);
          expect(bytes, text).to.not.equal(undefined);
          // The same address in Node's own canonical form reads the same.
          const canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
          expect(ipBytes(canonical), `${text} / ${canonical}`).to.deep.equal(bytes);
        }),
      );
    });

    it('matches addresses against IPv4 and IPv6 CIDR ranges', () => {
      expect(allowed(['10.0.0.0/8'], '10.255.0.1')).to.equal(true);
      expect(allowed(['10.0.0.0/8'], '11.0.0.1')).to.equal(false);
      // A dual-stack socket reports IPv4 clients in their mapped form.
      expect(allowed(['10.0.0.0/8'], '::ffff:10.9.9.9')).to.equal(true);
      expect(allowed(['203.0.113.7'], '203.0.113.7')).to.equal(true);
      expect(allowed(['203.0.113.7'], '203.0.113.8')).to.equal(false);
      expect(allowed(['192.168.4.0/22'], '192.168.7.255')).to.equal(true);
      expect(allowed(['192.168.4.0/22'], '192.168.8.0')).to.equal(false);
      expect(allowed(['2001:db8::/32'], '2001:db8:ffff::1')).to.equal(true);
      expect(allowed(['2001:db8::/32'], '2001:db9::1')).to.equal(false);
      expect(allowed(['2001:db8:0:8::/61'], '2001:db8:0:f::1')).to.equal(true);
      expect(allowed(['2001:db8:0:8::/61'], '2001:db8:0:10::1')).to.equal(false);
      expect(allowed(['::1'], '::1')).to.equal(true);
      expect(allowed(['0.0.0.0/0'], '198.51.100.1')).to.equal(true);
      // An IPv4 range says nothing about IPv6 clients; an unreadable address matches nothing.
      expect(allowed(['0.0.0.0/0'], '2001:db8::1')).to.equal(false);
      expect(allowed(['0.0.0.0/0'], 'unknown')).to.equal(false);
      expect(addressAllowed([parseRange('10.0.0.0/8')], undefined)).to.equal(false);
    });

    it('agrees with a bit-by-bit reading of the prefix', () => {
      fc.assert(
        fc.property(
          fc.uint8Array({ minLength: 16, maxLength: 16 }),
          fc.uint8Array({ minLength: 16, maxLength: 16 }),
          fc.integer({ min: 0, max: 128 }),
          (a, b, bits) => {
            const first = Uint8Array.from(b);
            for (let bit = bits; bit < 128; bit++) first[bit >> 3] = (first[bit >> 3] as number) & ~(0x80 >> (bit & 7));
            let same = true;
            for (let bit = 0; bit < bits; bit++)
              if (((a[bit >> 3] as number) ^ (first[bit >> 3] as number)) & (0x80 >> (bit & 7))) same = false;
            expect(inRange(a, { bytes: first, bits })).to.equal(same);
          },
        ),
      );
    });

    it('refuses ranges with bits past the prefix, bad prefixes and non-addresses, saying why', () => {
      expect(() => parseRange('10.1.2.3/8')).to.throw(/bits set past its \/8 prefix/);
      expect(() => parseRange('2001:db8::1/32')).to.throw(/past its \/32 prefix/);
      expect(() => parseRange('10.0.0.0/33')).to.throw(/prefix length outside 0 to 32/);
      expect(() => parseRange('::/129')).to.throw(/outside 0 to 128/);
      expect(() => parseRange('10.0.0.0/08')).to.throw(/prefix length/);
      expect(() => parseRange('example.com')).to.throw(/not an IP address or CIDR range/);
      expect(() => parseRange('10.0.0.0/')).to.throw(/prefix length/);
    });
  });

  describe('origins and referrers', () => {
    it('writes origins in one canonical form', () => {
      expect(canonicalOrigin(' HTTPS://App.Example.com/ ')).to.equal('https://app.example.com');
      expect(canonicalOrigin('https://app.example.com:443')).to.equal('https://app.example.com');
      expect(canonicalOrigin('http://localhost:5173')).to.equal('http://localhost:5173');
      expect(canonicalOrigin('https://*.Example.com')).to.equal('https://*.example.com');
      expect(canonicalOrigin('http://[::1]:8080')).to.equal('http://[::1]:8080');
      expect(canonicalOrigin('chrome-extension://abcdefghij')).to.equal('chrome-extension://abcdefghij');
    });

    it('refuses what is no origin, saying why', () => {
      expect(() => canonicalOrigin('null')).to.throw(/sandboxed/);
      expect(() => canonicalOrigin('app.example.com')).to.throw(/not an origin/);
      expect(() => canonicalOrigin('https://app.example.com/path')).to.throw(/no path/);
      expect(() => canonicalOrigin('https://user@app.example.com')).to.throw(/no path, query or user/);
      expect(() => canonicalOrigin('https://*.com')).to.throw(/top-level domain/);
      expect(() => canonicalOrigin('https://a.*.example.com')).to.throw(/not an origin/);
      expect(() => canonicalOrigin('https://app.example.com:99999')).to.throw(/port/);
      expect(() => canonicalOrigin('https://')).to.throw(/not an origin/);
    });

    it('matches exact origins in any case, and wildcards only on subdomains of the same scheme and port', () => {
      const m = new OriginMatcher(['https://app.example.com', 'https://*.example.org', 'http://*.dev.test:8080']);
      expect(m.matches('https://app.example.com')).to.equal(true);
      expect(m.matches('HTTPS://APP.EXAMPLE.COM')).to.equal(true);
      expect(m.matches('http://app.example.com')).to.equal(false);
      expect(m.matches('https://app.example.com:8443')).to.equal(false);
      expect(m.matches('https://a.example.org')).to.equal(true);
      expect(m.matches('https://a.b.example.org')).to.equal(true);
      expect(m.matches('https://example.org')).to.equal(false);
      expect(m.matches('https://evilexample.org')).to.equal(false);
      expect(m.matches('https://a.example.org.evil.com')).to.equal(false);
      expect(m.matches('https://x:1@.example.org')).to.equal(false);
      expect(m.matches('http://x.dev.test:8080')).to.equal(true);
      expect(m.matches('http://x.dev.test')).to.equal(false);
      expect(m.matches('null')).to.equal(false);
      expect(new OriginMatcher(['*']).matches('null')).to.equal(true);
      expect(new OriginMatcher([]).matches('https://app.example.com')).to.equal(false);
    });

    it('matches referrers by origin and path prefix, as browsers send them', () => {
      expect(canonicalReferrer('https://App.example.com')).to.equal('https://app.example.com/');
      expect(canonicalReferrer('https://*.example.com/shop/ü')).to.equal('https://*.example.com/shop/%C3%BC');
      expect(() => canonicalReferrer('example.com/shop')).to.throw(/page address prefix/);
      const m = new ReferrerMatcher(['https://app.example.com/', 'https://*.example.org/shop/']);
      expect(m.matches('https://app.example.com/')).to.equal(true);
      expect(m.matches('https://app.example.com/page?x=1')).to.equal(true);
      expect(m.matches('https://app.example.com:443/page')).to.equal(true);
      // A prefix never matches another host that merely starts alike.
      expect(m.matches('https://app.example.com.evil.com/')).to.equal(false);
      expect(m.matches('https://a.example.org/shop/cart')).to.equal(true);
      expect(m.matches('https://a.example.org/admin')).to.equal(false);
      expect(m.matches('not a url')).to.equal(false);
    });
  });

  describe('checked lists', () => {
    it('stores canonical, de-duplicated lists, from lists or one string', () => {
      expect(
        merge({
          origins: 'https://App.example.com, https://app.example.com/ https://*.example.org',
          ips: ['10.0.0.0/8', '2001:DB8::/32'],
          referrers: ['https://app.example.com/shop'],
          contracts: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
          userAgents: 'MyApp/*, Mozilla/5.0 (X11; Linux) *',
        }),
      ).to.deep.equal({
        origins: ['https://app.example.com', 'https://*.example.org'],
        ips: ['10.0.0.0/8', '2001:db8::/32'],
        referrers: ['https://app.example.com/shop'],
        contracts: ['0x5fbdb2315678afecb367f032d93f642f64180aa3'],
        userAgents: ['MyApp/*', 'Mozilla/5.0 (X11; Linux) *'],
      });
    });

    it('replaces only the fields given; "*", [] and null lift one; nothing left is no restrictions', () => {
      const base = merge({ origins: ['https://a.example.com'], ips: '10.0.0.0/8' });
      expect(merge({ ips: '192.0.2.0/24' }, base)).to.deep.equal({ origins: ['https://a.example.com'], ips: ['192.0.2.0/24'] });
      expect(merge({ origins: '*' }, base)).to.deep.equal({ ips: ['10.0.0.0/8'] });
      expect(merge({ origins: [], ips: null }, base)).to.equal(undefined);
      expect(merge({})).to.equal(undefined);
    });

    it('names the field and the entry of every mistake', () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ origins: 'https://a.example.com/x' }, /^origins: "https:\/\/a.example.com\/x" is not an origin/],
        [{ origins: ['*', 'https://a.example.com'] }, /^origins: "\*" \(any\) cannot be listed with other entries/],
        [{ ips: '10.0.0.1/8' }, /^ips: "10.0.0.1\/8" has address bits set/],
        [{ ips: 'intranet' }, /^ips: "intranet" is not an IP address/],
        [{ referrers: 'shop' }, /^referrers: "shop" is not a page address prefix/],
        [{ contracts: '0x1234' }, /^contracts: "0x1234" is not a contract address/],
        [{ userAgents: ['bad\u0001agent'] }, /^userAgents: .* has characters/],
        [{ origins: [1] }, /^origins: must be a list of strings/],
        [{ ips: new Array(101).fill('10.0.0.1') }, /^ips: may list at most 100 entries/],
        [{ userAgents: ['x'.repeat(257)] }, /^userAgents: entries are at most 256 characters/],
      ];
      for (const [input, message] of cases) expect(() => merge(input), JSON.stringify(input).slice(0, 60)).to.throw(message);
    });

    it('compiles a record once, and fails closed on entries that cannot be read', () => {
      const r = { origins: ['nonsense'], ips: ['not-an-ip'], contracts: ['0xABC'] };
      const c = compiledRestrictions(r);
      expect(compiledRestrictions(r)).to.equal(c);
      expect(c.origins?.matches('https://a.example.com')).to.equal(false);
      expect(c.ips).to.deep.equal([]);
      expect(addressAllowed(c.ips ?? [], '10.0.0.1')).to.equal(false);
      expect([...(c.contracts ?? [])]).to.deep.equal(['0xabc']);
      expect(compiledRestrictions({}).origins).to.equal(undefined);
    });
  });
});
