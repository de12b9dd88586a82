// Hostile nodes (issue 18, point 8), against a real gateway: a node that claims a head
// far above the others (the devnet's headOffset fault) is taken out of rotation and
// raises nothing, so honest nodes stay and recent blocks stay recent for a key
// without archive access; a node that trickles its answer a byte at a time is cut off
// at the attempt deadline and counted as timing out.

import { expect } from 'chai';
import { createServer, type Server, type Socket } from 'node:net';
import { createLogger } from '../../src/ops/log.js';
import { DEFAULT_CHAINS, get, rpc, startStack, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const L1 = DEFAULT_CHAINS.find((c) => c.name === 'l1');

describe('hostile nodes', function () {
  this.timeout(30_000);

  describe('a node claiming an implausible head', () => {
    let stack: Stack;
    const lines: string[] = [];
    const rt = () => stack.gateway.runtimes().find((c) => c.name === 'l1');

    before(async () => {
      stack = await startStack({
        chains: [L1 as NonNullable<typeof L1>],
        logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
      });
    });
    after(() => stack.close());

    it('is out of rotation, logged once, and neither pushes honest nodes out nor ages recent blocks', async () => {
      const free = (await stack.createKey('free')).value;
      const chain = stack.devnet.chains.get('l1');
      const height = chain?.height() as number;
      await stack.devnet.node('l1-full-2').setFaults({ headOffset: 1_000 });
      for (let i = 0; i < 3; i++) await rt()?.prober.probeAll();

      const health = (await get(stack.admin('/health/chains'))).json as {
        chains: Array<{ chain: string; head: number; nodes: Array<{ name: string; inRotation: boolean; reason: string | null }> }>;
      };
      const l1 = health.chains.find((c) => c.chain === 'l1');
      expect(l1?.head).to.equal(height);
      expect(l1?.nodes.map((n) => [n.name, n.inRotation])).to.deep.equal([
        ['l1-full-1', true],
        ['l1-full-2', false],
        ['l1-archive-1', true],
      ]);
      expect(l1?.nodes[1]?.reason).to.match(/^implausible head \d+: 1000 blocks above the median of the other nodes$/);

      // A block 10 below the real head is recent: a free key reads it from a full node.
      stack.devnet.node('l1-full-1').clearReceived();
      const res = await rpc(
        stack.url('/l1'),
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'eth_getBalance',
          params: ['0x0000000000000000000000000000000000000001', `0x${(height - 10).toString(16)}`],
        },
        { apikey: free },
      );
      expect(res.status).to.equal(200);
      expect(stack.devnet.node('l1-full-1').received).to.have.length(1);
      // (The pool's own descriptions read balances too, of the zero address.)
      expect(
        stack.devnet.node('l1-full-2').received.filter((r) => r.body.includes('0x0000000000000000000000000000000000000001')),
      ).to.deep.equal([]);

      const outs = lines.filter((l) => l.includes('"event":"node_rotation"') && l.includes('l1-full-2'));
      expect(outs).to.have.length(1);
      expect(outs[0]).to.contain('implausible head');
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_node_transitions_total\{chain="l1",node="l1-full-2",to="out"\} 1/);
      expect(metrics).not.to.match(/node="l1-(full-1|archive-1)",to="out"\} [1-9]/);

      // Honest again: back in rotation.
      await stack.devnet.node('l1-full-2').clearFaults();
      await rt()?.prober.probeAll();
      expect(rt()?.pool.nodes.map((n) => n.inRotation)).to.deep.equal([true, true, true]);
    });
  });

  describe('a node that trickles its answer', () => {
    let stack: Stack;
    let server: Server;
    const sockets = new Set<Socket>();
    let closedByGateway = 0;
    let trickles = 0;

    before(async () => {
      // A raw TCP node: probes get a block at once; every other call gets headers,
      // then one byte of a 2000-byte body every 100 ms (200 s in all). undici's idle
      // timeouts never fire on it.
      server = createServer((socket) => {
        sockets.add(socket);
        let timer: NodeJS.Timeout | undefined;
        let ended = false;
        socket.on('close', () => {
          clearInterval(timer);
          sockets.delete(socket);
          if (!ended) closedByGateway++;
        });
        socket.on('error', () => undefined);
        socket.on('data', (data: Buffer) => {
          const text = data.toString('utf8');
          if (!text.includes('\r\n\r\n')) return;
          // Probes and descriptions are answered; only the client's call trickles.
          if (!text.includes('eth_gasPrice')) {
            const body = text.includes('eth_getBlockByNumber')
              ? '{"jsonrpc":"2.0","id":1,"result":{"number":"0x3e8","hash":"0x01"}}'
              : '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method does not exist/is not available"}}';
            socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
            return;
          }
          trickles++;
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2000\r\n\r\n');
          let sent = 0;
          timer = setInterval(() => {
            if (++sent >= 2000) {
              ended = true;
              clearInterval(timer);
            }
            socket.write(' ');
          }, 100);
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      stack = await startStack({
        chains: [
          {
            name: 'slow',
            plugin: 'evm',
            path: '/slow',
            extra: '    attemptTimeoutMs: 400\n    maxAttempts: 1',
            nodes: [{ name: 'trickler', role: 'full' }],
          },
        ],
        externalNodes: new Map([['trickler', `http://127.0.0.1:${port}`]]),
        // Nothing but the attempt deadline can end the call.
        serverYaml: 'requestTimeoutMs: 120000',
      });
    });
    after(async () => {
      await stack.close();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    });

    it('is cut off at the attempt deadline: the client gets 504, the node a timeout in metrics', async () => {
      const res = await rpc(stack.url('/slow'), { jsonrpc: '2.0', id: 1, method: 'eth_gasPrice' }, { apikey: stack.key });
      expect(trickles).to.equal(1);
      expect(res.status).to.equal(504);
      expect((res.json as { error: { code: number } }).error.code).to.be.a('number');
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_upstream_requests_total\{chain="slow",node="trickler",outcome="timeout"\} 1/);
      // The gateway dropped the connection: it holds nothing for the trickle.
      await until(() => closedByGateway > 0, { what: 'the gateway drops the trickle' });
      expect(closedByGateway).to.equal(1);
    });
  });
});
