import { expect } from 'chai';
import { EndpointTable } from '../../../src/transports/shared/endpoints.js';

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
