// The access log's pieces: the log file rotated by size (no line split across files,
// `files` kept), the client address behind trusted proxies, and the trace id of a
// W3C traceparent.

import { expect } from 'chai';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { traceIdOf, userAgentOf } from '../../../src/exec/request-record.js';
import { clientAddress, TrustedProxies } from '../../../src/exec/client-address.js';
import { RotatingFile } from '../../../src/ops/log-file.js';
import { createLogger } from '../../../src/ops/log.js';

describe('log file rotation', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nr-log-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('rotates before the file would pass maxBytes, keeps `files` rotated files, and never splits a line', async () => {
    const path = join(dir, 'sub', 'gw.log');
    const file = await RotatingFile.open(path, 1024, 2);
    const logger = createLogger('info', file);
    for (let i = 0; i < 200; i++) {
      logger.info('line', { i, pad: 'x'.repeat(20) });
      // Several batches: rotation happens between whole batches of lines.
      if (i % 10 === 9) await logger.flush();
    }
    await logger.flush();
    await file.close();
    expect((await readdir(join(dir, 'sub'))).sort()).to.deep.equal(['gw.log', 'gw.log.1', 'gw.log.2']);
    const numbers: number[] = [];
    for (const name of ['gw.log.2', 'gw.log.1', 'gw.log']) {
      const text = await readFile(join(dir, 'sub', name), 'utf8');
      expect(Buffer.byteLength(text), name).to.be.at.most(1024);
      expect(text.endsWith('\n')).to.equal(true);
      for (const line of text.trimEnd().split('\n')) numbers.push((JSON.parse(line) as { i: number }).i);
    }
    // The newest lines, in order, with none lost between the files kept.
    expect(numbers[numbers.length - 1]).to.equal(199);
    for (let k = 1; k < numbers.length; k++) expect(numbers[k]).to.equal((numbers[k - 1] as number) + 1);
  });

  it('appends to an existing file and counts its size; with files: 0 it starts the file over', async () => {
    const path = join(dir, 'gw.log');
    await writeFile(path, 'x'.repeat(1019) + '\n');
    const file = await RotatingFile.open(path, 1024, 0);
    file.write('{"a":1}\n');
    await file.flush();
    expect(await readFile(path, 'utf8')).to.equal('{"a":1}\n');
    file.write('{"b":2}\n');
    await file.close();
    expect(await readFile(path, 'utf8')).to.equal('{"a":1}\n{"b":2}\n');
    expect(await readdir(dir)).to.deep.equal(['gw.log']);
  });
});

describe('client address', () => {
  const proxies = new TrustedProxies(['10.0.0.0/8', '::1']);

  it('is the peer, unless the peer is a trusted proxy', () => {
    expect(clientAddress('203.0.113.9', '198.51.100.1', proxies)).to.equal('203.0.113.9');
    expect(clientAddress('::ffff:203.0.113.9', undefined, proxies)).to.equal('203.0.113.9');
    expect(clientAddress('10.1.2.3', undefined, proxies)).to.equal('10.1.2.3');
    expect(clientAddress('10.1.2.3', '198.51.100.1', new TrustedProxies([]))).to.equal('10.1.2.3');
  });

  it('reads X-Forwarded-For from the right, past trusted hops, never trusting what the client wrote', () => {
    expect(clientAddress('10.1.2.3', '198.51.100.1', proxies)).to.equal('198.51.100.1');
    expect(clientAddress('::1', '6.6.6.6, 198.51.100.1, 10.9.9.9', proxies)).to.equal('198.51.100.1');
    expect(clientAddress('::ffff:10.1.2.3', ['6.6.6.6', '198.51.100.1'], proxies)).to.equal('198.51.100.1');
    // A hop that is not an address ends the walk at the last real one.
    expect(clientAddress('10.1.2.3', '198.51.100.1, "><script>', proxies)).to.equal('10.1.2.3');
    expect(clientAddress('10.1.2.3', '10.0.0.5, 10.0.0.6', proxies)).to.equal('10.0.0.5');
  });
});

describe('trace ids and user agents for the request line', () => {
  it('takes the trace id of a valid traceparent only', () => {
    const id = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(traceIdOf(`00-${id}-00f067aa0ba902b7-01`)).to.equal(id);
    expect(traceIdOf(`01-${id}-00f067aa0ba902b7-01-extra`)).to.equal(id);
    expect(traceIdOf(undefined)).to.equal(undefined);
    expect(traceIdOf(`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`)).to.equal(undefined);
    expect(traceIdOf(`00-${id}-${'0'.repeat(16)}-01`)).to.equal(undefined);
    expect(traceIdOf(`ff-${id}-00f067aa0ba902b7-01`)).to.equal(undefined);
    expect(traceIdOf(`00-${id.toUpperCase()}-00f067aa0ba902b7-01`)).to.equal(undefined);
    expect(traceIdOf(`00-${id}-00f067aa0ba902b7-01"`)).to.equal(undefined);
  });

  it('cuts long user agents', () => {
    expect(userAgentOf('curl/8.5.0')).to.equal('curl/8.5.0');
    expect(userAgentOf('a'.repeat(10_000))).to.have.length(256);
  });
});
