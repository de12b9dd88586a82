// Path normalisation: ordinary paths kept, dot segments resolved, climbing and
// encoded separators refused; and, over generated paths, no dot, empty or
// encoded-separator segment survives.

import { expect } from 'chai';
import fc from 'fast-check';
import { GatewayError } from '../../../src/errors.js';
import { normalizePath } from '../../../src/transports/shared/path.js';

describe('path normalisation', () => {
  const n = (p: string): string => normalizePath(p, 2048);
  it('leaves ordinary paths alone', () => {
    expect(n('/hub/rest/cosmos/auth/v1beta1/params')).to.equal('/hub/rest/cosmos/auth/v1beta1/params');
  });
  it('collapses doubled slashes and resolves dot segments, encoded or not', () => {
    expect(n('//hub//rest///cosmos')).to.equal('/hub/rest/cosmos');
    expect(n('/hub/rest/./cosmos/../sdk/x')).to.equal('/hub/rest/sdk/x');
    expect(n('/hub/rest/%2e%2E/rpc/status')).to.equal('/hub/rpc/status');
    expect(n('/a/b/')).to.equal('/a/b/');
  });
  it('decodes percent-encoded unreserved characters, and only those', () => {
    expect(n('/hub/rest/cosmos/b%61nk/v1beta1/%62alances')).to.equal('/hub/rest/cosmos/bank/v1beta1/balances');
    expect(n('/%7e%5F%2d%2E%30%39%41%5a%61%7A')).to.equal('/~_-.09AZaz');
    // Reserved and other bytes stay encoded, exactly as sent.
    expect(n('/a/%20%3a%3A%40%60%5b%7b%25%C3%A9')).to.equal('/a/%20%3a%3A%40%60%5b%7b%25%C3%A9');
    // Decoding happens once: %2561 is "%61" to a node, not "a".
    expect(n('/a/%2561')).to.equal('/a/%2561');
  });
  it('refuses climbing above the root, encoded separators and overlong paths', () => {
    expect(() => n('/../etc/passwd'))
      .to.throw()
      .with.property('code', 'INVALID_REQUEST');
    expect(() => n('/hub/rest/a%2Fb'))
      .to.throw()
      .with.property('code', 'INVALID_REQUEST');
    expect(() => n('/hub/rest/a%5cb'))
      .to.throw()
      .with.property('code', 'INVALID_REQUEST');
    expect(() => normalizePath('/' + 'a'.repeat(50), 20))
      .to.throw()
      .with.property('code', 'INVALID_REQUEST');
  });
});

describe('path normalisation properties', () => {
  it('normalised paths have no dot, empty or encoded-separator segments, or a table error', () => {
    const segment = fc.oneof(
      fc.constantFrom('.', '..', '', '%2e', '%2E%2e', 'a', 'hub', 'rest', '%2F', '%5c', '\\', 'x.y', '%61', '%2561', '%7E%20', '%2e%61'),
      fc.string({ maxLength: 6 }).filter((s) => !s.includes('/') && !s.includes('?')),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 12 }), (parts) => {
        const path = `/${parts.join('/')}`;
        let out: string;
        try {
          out = normalizePath(path, 2048);
        } catch (err) {
          expect(err).to.be.instanceOf(GatewayError);
          expect((err as GatewayError).code).to.equal('INVALID_REQUEST');
          return;
        }
        expect(out.startsWith('/')).to.equal(true);
        const segs = out.split('/').slice(1);
        for (const [i, s] of segs.entries()) {
          const decoded = s.replace(/%2e/gi, '.');
          expect(decoded === '.' || decoded === '..', out).to.equal(false);
          if (i < segs.length - 1) expect(s, out).to.not.equal('');
        }
        expect(out.toLowerCase()).to.not.match(/%2f|%5c/);
        // Unreserved characters are never left encoded, and a second pass changes nothing.
        expect(out).to.not.match(/%(?:3[0-9]|[46][1-9a-f]|[57][0-9a]|2[de]|5f|7e)/i);
        expect(normalizePath(out, 2048)).to.equal(out);
      }),
      { numRuns: 3000 },
    );
  });
});
