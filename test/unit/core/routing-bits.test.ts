import { expect } from 'chai';
import { extractKey } from '../../../src/auth/extract.js';
import { EndpointTable } from '../../../src/http/endpoints.js';
import { normalizePath } from '../../../src/http/path.js';

const KEY = 'nrk_' + 'a'.repeat(32);

describe('key extraction', () => {
  it('reads the header and the query, and strips the key from the query', () => {
    expect(extractKey(KEY, '')).to.deep.equal({ key: KEY, query: '' });
    expect(extractKey(undefined, `a=1&apikey=${KEY}&b=2`)).to.deep.equal({ key: KEY, query: 'a=1&b=2' });
    expect(extractKey(undefined, `APIKey=${KEY}`)).to.deep.equal({ key: KEY, query: '' });
    expect(extractKey(KEY, `apikey=${KEY}`).key).to.equal(KEY);
  });

  it('refuses missing, conflicting and malformed keys', () => {
    expect(() => extractKey(undefined, 'a=1'))
      .to.throw()
      .with.property('code', 'MISSING_KEY');
    expect(() => extractKey(KEY, `apikey=nrk_${'b'.repeat(32)}`))
      .to.throw()
      .with.property('code', 'CONFLICTING_KEYS');
    expect(() => extractKey(`${KEY}, nrk_${'b'.repeat(32)}`, ''))
      .to.throw()
      .with.property('code', 'CONFLICTING_KEYS');
    expect(() => extractKey('x'.repeat(200), ''))
      .to.throw()
      .with.property('code', 'INVALID_KEY');
    expect(() => extractKey('nrk_\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9', ''))
      .to.throw()
      .with.property('code', 'INVALID_KEY');
    expect(() => extractKey(undefined, 'apikey=%ZZ'))
      .to.throw()
      .with.property('code', 'INVALID_KEY');
  });
});

describe('endpoint table', () => {
  const t = new EndpointTable([
    { path: '/hub/rest', host: undefined, target: 'rest' },
    { path: '/hub/rest-archive', host: undefined, target: 'archive' },
    { path: undefined, host: 'l1.example.com', target: 'l1-host' },
    { path: '/l1', host: undefined, target: 'l1' },
  ]);

  it('matches whole path segments, longest prefix first', () => {
    expect(t.match('gw', '/hub/rest/cosmos/x')).to.deep.equal({ target: 'rest', rest: '/cosmos/x' });
    expect(t.match('gw', '/hub/rest-archive/cosmos/x')).to.deep.equal({ target: 'archive', rest: '/cosmos/x' });
    expect(t.match('gw', '/hub/rest')).to.deep.equal({ target: 'rest', rest: '/' });
    expect(t.match('gw', '/hub/restless')).to.equal(undefined);
    expect(t.match('gw', '/l1')).to.deep.equal({ target: 'l1', rest: '/' });
  });

  it('matches by Host, with or without a port', () => {
    expect(t.match('L1.example.com:8080', '/')).to.deep.equal({ target: 'l1-host', rest: '/' });
    expect(t.match('l1.example.com', '/anything')).to.deep.equal({ target: 'l1-host', rest: '/anything' });
    expect(t.match('other.example.com', '/')).to.equal(undefined);
  });
});

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
