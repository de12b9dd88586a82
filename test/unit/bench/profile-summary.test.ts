// The heap profile's tables from fixed profiles: a sampling heap profile's self sizes
// added up by package or file and by function (the tree walked whole, empty frames left
// out), and bytes per request as printed.

import { expect } from 'chai';
import { heapTotals, placeOf, topPerRequest, type HeapNode } from '../../../bench/profile-summary.js';

const ROOT = '/repo/';
const frame = (functionName: string, url: string, lineNumber = 0): HeapNode['callFrame'] => ({ functionName, url, lineNumber });

describe('bench: profile summaries', () => {
  it('places a frame in its package, our file, Node’s module, or by its name', () => {
    expect(placeOf('file:///repo/node_modules/undici/lib/core.js', 'f', ROOT)).to.equal('package undici');
    expect(placeOf('file:///repo/node_modules/@opentelemetry/api/build/x.js', 'f', ROOT)).to.equal('package @opentelemetry/api');
    expect(placeOf('file:///repo/dist/src/exec/call-path.js', 'f', ROOT)).to.equal('dist/src/exec/call-path.js');
    expect(placeOf('node:_http_server', 'f', ROOT)).to.equal('node:_http_server');
    expect(placeOf('', '(garbage collector)', ROOT)).to.equal('(garbage collector)');
  });

  it('adds up a heap profile’s self sizes by place and by function, over the whole tree', () => {
    const head: HeapNode = {
      callFrame: frame('(root)', ''),
      selfSize: 0,
      children: [
        {
          callFrame: frame('parserOnHeadersComplete', 'node:_http_common', 10),
          selfSize: 4000,
          children: [
            { callFrame: frame('handle', 'file:///repo/dist/src/transports/http/traffic-handler.js', 41), selfSize: 3000 },
            {
              callFrame: frame('', 'file:///repo/dist/src/exec/call-path.js', 7),
              selfSize: 1000,
              children: [{ callFrame: frame('dispatch', 'file:///repo/node_modules/undici/lib/pool.js', 3), selfSize: 2000 }],
            },
          ],
        },
        { callFrame: frame('parserOnHeadersComplete', 'node:_http_common', 10), selfSize: 500 },
        { callFrame: frame('write', 'file:///repo/node_modules/undici/lib/client.js', 99), selfSize: 1500 },
      ],
    };
    const t = heapTotals(head, ROOT);
    expect(t.all).to.equal(12_000);
    expect(Object.fromEntries(t.byPlace)).to.deep.equal({
      'node:_http_common': 4500,
      'dist/src/transports/http/traffic-handler.js': 3000,
      'dist/src/exec/call-path.js': 1000,
      'package undici': 3500,
    });
    expect(t.byFunction.get('parserOnHeadersComplete  node:_http_common:11')).to.equal(4500);
    expect(t.byFunction.get('(anonymous)  dist/src/exec/call-path.js:8')).to.equal(1000);
    expect([...t.byFunction.keys()].some((k) => k.startsWith('(root)'))).to.equal(false);
  });

  it('prints bytes per request and the share of all, largest first', () => {
    const lines = topPerRequest(
      new Map([
        ['small', 1000],
        ['large', 9000],
      ]),
      10_000,
      10,
      5,
    ).split('\n');
    expect(lines).to.deep.equal(['    900 B/req  90.0%  large', '    100 B/req  10.0%  small']);
  });
});
