// Giving up on an attempt (src/pool/failures.ts Cancel, src/pool/upstream.ts): a hedge
// that lost stops its request to the node at once (the connection to a hung node is
// not held until the attempt's timeout) and rejects with CallAborted, nobody's failure;
// a cancel that came before the request is bound stops it as soon as it is sent.

import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallAborted, Cancel } from '../../../src/pool/failures.js';
import { UpstreamNode } from '../../../src/pool/upstream.js';
import { until } from '../../support/until.js';

describe('cancelling a request to a node (src/pool/upstream.ts)', () => {
  let server: Server;
  let url: string;
  const held: IncomingMessage[] = [];
  let closed = 0;

  before(async () => {
    // A hung node: it takes requests and never answers.
    server = createServer((req) => {
      held.push(req);
      req.socket.once('close', () => closed++);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('rejects with CallAborted and drops the connection to the hung node', async () => {
    const node = new UpstreamNode(url);
    const cancel = new Cancel();
    const before = held.length;
    const answer = node.postJson('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}', 60_000, cancel);
    await until(() => held.length > before);
    expect(node.active).to.equal(1);
    cancel.cancel();
    const err: unknown = await answer.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(CallAborted);
    expect(node.active).to.equal(0);
    await until(() => closed > 0);
    expect(cancel.cancelled).to.equal(true);
    await node.destroy();
  });

  it('a cancel given before the request is bound stops it at once; cancelling twice is once', async () => {
    const cancel = new Cancel();
    cancel.cancel();
    cancel.cancel();
    let stopped = 0;
    cancel.bind({ cancel: () => void stopped++ });
    expect(stopped).to.equal(1);
    const node = new UpstreamNode(url);
    const err: unknown = await node.postJson('{}', 60_000, cancel).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(CallAborted);
    await node.destroy();
  });
});
