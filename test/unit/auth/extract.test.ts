import { expect } from 'chai';
import { extractKey } from '../../../src/auth/extract.js';

const KEY = 'nrk_' + 'a'.repeat(32);

describe('key extraction', () => {
  it('reads the header and the query, and strips the key from the query', () => {
    expect(extractKey(KEY, '')).to.deep.equal({ key: KEY, query: '' });
    expect(extractKey(undefined, `a=1&apikey=${KEY}&b=2`)).to.deep.equal({ key: KEY, query: 'a=1&b=2' });
    expect(extractKey(undefined, `APIKey=${KEY}`)).to.deep.equal({ key: KEY, query: '' });
    expect(extractKey(KEY, `apikey=${KEY}`).key).to.equal(KEY);
  });

  it('finds the key in a query parameter spelt in any case or percent-encoding, and removes it', () => {
    const other = `nrk_${'b'.repeat(32)}`;
    const cases: Array<[string, string]> = [
      [`a=1&api%6Bey=${KEY}&b=2`, 'a=1&b=2'],
      [`%41%50%49%4B%45%59=${KEY}`, ''],
      [`apikey%3D${KEY}&x=1`, 'x=1'], // the `=` itself encoded: a whole-query decoder reads apikey
      [`api%256Bey=${KEY}`, ''], // encoded twice
      [`x=1;apikey=${KEY};y=2`, 'x=1;y=2'], // servers that split on ";"
      [`apikey=${encodeURIComponent(KEY)}&q=apikey&z=%20`, 'q=apikey&z=%20'],
    ];
    for (const [query, rest] of cases) expect(extractKey(undefined, query), query).to.deep.equal({ key: KEY, query: rest });
    // An empty one is removed and read as no key.
    expect(extractKey(KEY, 'APIKEY=&a=1')).to.deep.equal({ key: KEY, query: 'a=1' });
    // Two different keys, however spelt, are still a conflict.
    expect(() => extractKey(KEY, `api%6Bey=${other}`))
      .to.throw()
      .with.property('code', 'CONFLICTING_KEYS');
    expect(() => extractKey(undefined, `apikey=${KEY}&ApiKey%3D${other}`))
      .to.throw()
      .with.property('code', 'CONFLICTING_KEYS');
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
