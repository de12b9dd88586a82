// Provider nodes behind credentials: devnet nodes that answer only with a header, a
// token in the URL path and one in the query (gRPC: metadata), on every transport —
// JSON-RPC, the CometBFT URI form, REST, WebSocket subscriptions and gRPC. The secrets
// reach the nodes and nowhere else: /health/chains, check-config and logs print REDACTED.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { createLogger } from '../../src/ops/log.js';
import { runCli } from '../support/cli.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

const TOKEN = 'hdr-secret-7f3a91';
const PATH_TOKEN = 'path-secret-c41d2e';
const QUERY_TOKEN = 'query-secret-9b8e77';
const GRPC_TOKEN = 'grpc-secret-5e0c13';
/** What a misconfigured node sends instead of the token it wants. */
const WRONG = 'wrong-secret-55a1f0';
const SECRETS = [TOKEN, PATH_TOKEN, QUERY_TOKEN, GRPC_TOKEN, WRONG];
const misconfigured = { credentials: { headers: { Authorization: `Bearer ${TOKEN}` } }, headers: { Authorization: `Bearer ${WRONG}` } };

const provider = {
  credentials: { headers: { Authorization: `Bearer ${TOKEN}` }, basePath: `/v2/${PATH_TOKEN}`, query: { key: QUERY_TOKEN } },
  // The value comes from the environment, as an operator would write it.
  headers: { Authorization: 'Bearer ${NR_TEST_PROVIDER_TOKEN}' },
};

describe('nodes behind credentials', function () {
  this.timeout(30_000);
  let stack: Stack;
  const lines: string[] = [];

  before(async () => {
    process.env.NR_TEST_PROVIDER_TOKEN = TOKEN;
    process.env.NR_TEST_GRPC_TOKEN = GRPC_TOKEN;
    stack = await startStack({
      logger: createLogger('debug', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
      chains: [
        { name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'p-evm', role: 'full', ...provider }] },
        { name: 'hub-rpc', plugin: 'sdk-rpc', path: '/hub/rpc', network: 'hub', nodes: [{ name: 'p-rpc', role: 'full', ...provider }] },
        { name: 'hub-rest', plugin: 'sdk-rest', path: '/hub/rest', network: 'hub', nodes: [{ name: 'p-rest', role: 'full', ...provider }] },
        { name: 'bad-l1', plugin: 'evm', path: '/bad/l1', nodes: [{ name: 'm-evm', role: 'full', ...misconfigured }] },
        {
          name: 'bad-rest',
          plugin: 'sdk-rest',
          path: '/bad/rest',
          network: 'hub',
          nodes: [{ name: 'm-rest', role: 'full', ...misconfigured }],
        },
        {
          name: 'bad-grpc',
          plugin: 'sdk-grpc',
          network: 'hub',
          host: 'bad-grpc.example',
          nodes: [{ name: 'm-grpc', role: 'full', credentials: { headers: { 'x-api-key': GRPC_TOKEN } }, headers: { 'x-api-key': WRONG } }],
        },
        {
          name: 'hub-grpc',
          plugin: 'sdk-grpc',
          network: 'hub',
          nodes: [
            {
              name: 'p-grpc',
              role: 'full',
              credentials: { headers: { 'x-api-key': GRPC_TOKEN } },
              headers: { 'X-Api-Key': '${NR_TEST_GRPC_TOKEN}' },
            },
          ],
        },
      ],
    });
  });
  after(async () => {
    await stack.close();
    delete process.env.NR_TEST_PROVIDER_TOKEN;
    delete process.env.NR_TEST_GRPC_TOKEN;
  });

  const h = (): Record<string, string> => ({ apikey: stack.key });
  /** What the node received for calls carrying `marker` (health probes carry none). */
  const received = (node: string, marker: string) =>
    stack.devnet.node(node).received.filter((r) => r.body.includes(marker) || r.path.includes(marker));

  function expectCredentials(r: { path: string; headers: Readonly<Record<string, unknown>> }): void {
    expect(r.headers.authorization).to.equal(`Bearer ${TOKEN}`);
    expect(r.path.startsWith(`/v2/${PATH_TOKEN}`)).to.equal(true);
    expect(new URLSearchParams(r.path.split('?')[1] ?? '').getAll('key')).to.deep.equal([QUERY_TOKEN]);
    expect(r.headers.apikey).to.equal(undefined);
  }

  it('the simulated provider nodes refuse calls without their credentials', async () => {
    const bare = await rpc(stack.devnet.node('p-evm').url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' });
    expect(bare.status).to.equal(401);
    const noHeader = await rpc(`${stack.devnet.node('p-evm').url}/v2/${PATH_TOKEN}?key=${QUERY_TOKEN}`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_chainId',
    });
    expect(noHeader.status).to.equal(401);
  });

  it('JSON-RPC calls and health probes carry the header, the path token and the query token', async () => {
    const res = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 'cred-1', method: 'eth_blockNumber' }, h());
    expect(res.status).to.equal(200);
    expect((res.json as { result: string }).result).to.match(/^0x/);
    const [r] = received('p-evm', 'cred-1');
    expect(r?.path).to.equal(`/v2/${PATH_TOKEN}?key=${QUERY_TOKEN}`);
    expectCredentials(r as NonNullable<typeof r>);
    // The node is in rotation: its probes got through too.
    const chains = (await get(stack.admin('/health/chains'))).json as {
      chains: Array<{ chain: string; nodes: Array<{ inRotation: boolean }> }>;
    };
    for (const c of chains.chains) expect(c.nodes[0]?.inRotation, c.chain).to.equal(true);
  });

  it('the CometBFT URI form and JSON-RPC keep the path and query tokens next to the call’s own query', async () => {
    const height = stack.devnet.node('p-rpc').height();
    const uri = await get(stack.url(`/hub/rpc/block?height=${height}&cred=2`), h());
    expect(uri.status).to.equal(200);
    const [r] = received('p-rpc', 'cred=2');
    expectCredentials(r as NonNullable<typeof r>);
    expect(r?.path).to.equal(`/v2/${PATH_TOKEN}/block?height=${height}&cred=2&key=${QUERY_TOKEN}`);
    const post = await rpc(stack.url('/hub/rpc'), { jsonrpc: '2.0', id: 'cred-3', method: 'status', params: {} }, h());
    expect(post.status).to.equal(200);
    expectCredentials(received('p-rpc', 'cred-3')[0] as NonNullable<ReturnType<typeof received>[number]>);
  });

  it('REST calls keep the tokens, and a client cannot replace the node’s query token with its own', async () => {
    const res = await get(stack.url(`/hub/rest/cosmos/auth/v1beta1/params?key=not-the-token&cred=4`), h());
    expect(res.status).to.equal(200);
    const [r] = received('p-rest', 'cred=4');
    expectCredentials(r as NonNullable<typeof r>);
    expect(r?.path).to.equal(`/v2/${PATH_TOKEN}/cosmos/auth/v1beta1/params?cred=4&key=${QUERY_TOKEN}`);
  });

  it('WebSocket subscriptions open their node socket with the header, path and query', async () => {
    const socket = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: h() });
    try {
      const sub = (await socket.call('eth_subscribe', ['newHeads'])).result;
      expect(sub).to.be.a('string');
      stack.devnet.chains.get('l1')?.advance();
      const { note } = await socket.note(sub);
      expect((note.params.result as { number: string }).number).to.match(/^0x/);
      const handshakes = stack.devnet.node('p-evm').received.filter((x) => x.method === 'WS');
      expect(handshakes.length).to.be.greaterThan(0);
      for (const x of handshakes) expectCredentials(x);
    } finally {
      await socket.close();
    }
  });

  it('gRPC calls carry the node’s headers as metadata, over whatever the client sent', async () => {
    const client = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('apikey', stack.key);
    md.set('x-api-key', 'client-chosen');
    md.set('x-marker', 'cred-5');
    const code = await new Promise<number>((resolve) =>
      client.makeUnaryRequest(
        '/cosmos.auth.v1beta1.Query/Params',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        md,
        (err) => resolve(err === null ? 0 : err.code),
      ),
    );
    client.close();
    expect(code).to.equal(0);
    const calls = stack.devnet.node('p-grpc').received.filter((x) => x.headers['x-marker'] === 'cred-5');
    expect(calls).to.have.length(1);
    expect(calls[0]?.headers['x-api-key']).to.equal(GRPC_TOKEN);
    expect(calls[0]?.headers.apikey).to.equal(undefined);
  });

  it('takes a node refusing the gateway’s credentials (401, UNAUTHENTICATED) for a failed node, never relaying its refusal', async () => {
    const rpcAnswer = await rpc(stack.url('/bad/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, h());
    expect(rpcAnswer.status).to.equal(502);
    expect((rpcAnswer.json as { error: { code: number } }).error.code).to.equal(-32603);
    const rest = await get(stack.url('/bad/rest/cosmos/auth/v1beta1/params'), h());
    expect(rest.status).to.equal(502);
    expect((rest.json as { error: { code: number } }).error.code).to.equal(-32603);
    for (const text of [rpcAnswer.text, rest.text]) expect(text).to.not.contain('requires credentials');
    const client = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure(), {
      'grpc.default_authority': 'bad-grpc.example',
    });
    const md = new grpc.Metadata();
    md.set('apikey', stack.key);
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.makeUnaryRequest(
        '/cosmos.auth.v1beta1.Query/Params',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        md,
        resolve,
      ),
    );
    client.close();
    expect(err?.code).to.not.equal(undefined);
    expect(err?.code).to.not.equal(grpc.status.UNAUTHENTICATED);
    expect(err?.details).to.not.contain('requires credentials');
    expect(stack.devnet.node('m-grpc').received.some((r) => r.headers['x-api-key'] === WRONG)).to.equal(true);
  });

  it('prints REDACTED for tokens in /health/chains, check-config and logs', async () => {
    const health = await get(stack.admin('/health/chains'));
    const l1 = (health.json as { chains: Array<{ chain: string; nodes: Array<Record<string, unknown>> }> }).chains.find(
      (c) => c.chain === 'l1',
    );
    const node = l1?.nodes[0] as Record<string, unknown>;
    expect(node.url).to.equal(`${stack.devnet.node('p-evm').url}/REDACTED`);
    expect(node.ws).to.equal(`${stack.devnet.node('p-evm').url.replace('http', 'ws')}/REDACTED`);
    expect(node.headers).to.deep.equal({ authorization: 'REDACTED' });
    const check = await runCli(['check-config', stack.configFile], { NR_TEST_PROVIDER_TOKEN: TOKEN, NR_TEST_GRPC_TOKEN: GRPC_TOKEN });
    expect(check.code, check.stderr).to.equal(0);
    expect(check.stdout).to.contain(`p-evm`);
    expect(check.stdout).to.contain(`${stack.devnet.node('p-evm').url}/REDACTED`);
    expect(check.stdout).to.contain('authorization: REDACTED');
    expect(check.stdout).to.contain('x-api-key: REDACTED');
    // Log lines are written once per event-loop turn.
    await new Promise((r) => setImmediate(r));
    expect(lines.length).to.be.greaterThan(5);
    for (const text of [health.text, check.stdout, check.stderr, lines.join('\n')]) {
      for (const secret of SECRETS) expect(text).to.not.contain(secret);
    }
  });
});
