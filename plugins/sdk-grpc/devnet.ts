// The devnet's sdk-grpc family: a Cosmos-SDK node's gRPC server (@grpc/grpc-js; a
// server family, not the devnet's HTTP node server), services defined by hand over raw
// Buffers: auth Params, tendermint GetNodeInfo, GetLatestBlock and GetBlockByHeight,
// node Status, and the standard health service (Check, and Watch, which streams SERVING now and on
// every new block). It shares its network's simulated chain with the hub's RPC and REST
// nodes. Full nodes keep `fullRetention` blocks and refuse older heights with the SDK's
// real messages. Calls are recorded (path, metadata, request) like HTTP requests.
// Faults: down, latencyMs, hang, status (a gRPC status code), errorRate (UNAVAILABLE),
// stalled, otherChain (another network id in node info and block headers). A node set
// up with credentials answers calls without its headers UNAUTHENTICATED.

import * as grpc from '@grpc/grpc-js';
import { defineDevnetFamily, DevnetNodeBase, pb, type NodeSetup, type ProtoWriter, type SimChain } from 'noderouter/devnet';
import { varint } from './proto.js';

const WATCH_POLL_MS = 20;
const SERVING = 1;
const { INVALID_ARGUMENT, UNKNOWN, UNAVAILABLE, UNAUTHENTICATED } = grpc.status;

type Answer = { readonly ok: Buffer } | { readonly code: number; readonly message: string };
type UnaryHandler = (request: Buffer, metadata: grpc.Metadata) => Answer;

const raw = (b: Buffer): Buffer => b;
function method(path: string, responseStream: boolean): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: false,
    responseStream,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  };
}

const AUTH = '/cosmos.auth.v1beta1.Query/';
const TENDERMINT = '/cosmos.base.tendermint.v1beta1.Service/';
const NODE = '/cosmos.base.node.v1beta1.Service/';
const HEALTH = '/grpc.health.v1.Health/';

function hashBytes(chain: SimChain, h: number): Buffer {
  return Buffer.from(chain.hash(h).slice(2), 'hex');
}

function blockId(chain: SimChain, h: number): ProtoWriter {
  return pb()
    .bytes(1, hashBytes(chain, h))
    .message(2, pb().uint(1, 1).bytes(2, hashBytes(chain, h)));
}

/** tendermint.types.Header (proposer as bytes) or the SDK's Block header (proposer as a string). */
function header(chain: SimChain, network: string, h: number, sdk: boolean): ProtoWriter {
  const w = pb()
    .message(1, pb().uint(1, 11).uint(2, 0))
    .string(2, network)
    .uint(3, h)
    .message(4, pb().uint(1, chain.time(h)).uint(2, 0))
    .message(5, blockId(chain, Math.max(1, h - 1)))
    .bytes(11, hashBytes(chain, h));
  return sdk ? w.string(14, 'cosmosvalcons1devnet') : w.bytes(14, Buffer.alloc(20, 0xa1));
}

/** GetLatestBlockResponse / GetBlockByHeightResponse: block_id 1, block 2, sdk_block 3. */
function blockResponse(chain: SimChain, network: string, h: number): Buffer {
  const block = (sdk: boolean): ProtoWriter =>
    pb()
      .message(1, header(chain, network, h, sdk))
      .message(2, pb())
      .message(3, pb())
      .message(
        4,
        pb()
          .uint(1, Math.max(0, h - 1))
          .message(3, blockId(chain, Math.max(1, h - 1))),
      );
  return pb().message(1, blockId(chain, h)).message(2, block(false)).message(3, block(true)).finish();
}

export class DevnetGrpcNode extends DevnetNodeBase {
  private server: grpc.Server | undefined;
  /** Calls held by the hang fault: answered UNAVAILABLE when it clears. */
  private readonly hung = new Set<() => void>();
  /** Health/Watch streams open now (tests check that a cancel reaches the node). */
  watching = 0;

  private readonly host: string;
  private port: number;

  constructor(setup: NodeSetup) {
    super(setup);
    this.host = setup.host;
    this.port = setup.port;
  }

  async listen(): Promise<void> {
    const server = new grpc.Server();
    const unary: Record<string, UnaryHandler> = {
      [`${AUTH}Params`]: (_req, md) => this.atHeight(md, () => this.authParams()),
      [`${TENDERMINT}GetLatestBlock`]: () => ({ ok: blockResponse(this.chain, this.networkId(), this.height()) }),
      [`${TENDERMINT}GetNodeInfo`]: () => ({ ok: this.nodeInfo() }),
      [`${TENDERMINT}GetBlockByHeight`]: (req) => this.blockByHeight(req),
      [`${NODE}Status`]: () => ({ ok: pb().uint(1, this.earliest()).uint(2, this.height()).finish() }),
      [`${HEALTH}Check`]: () => ({ ok: pb().uint(1, SERVING).finish() }),
    };
    const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [path, answer] of Object.entries(unary)) {
      definition[path] = method(path, false);
      implementation[path] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
        this.serve(path, call, (fail) => {
          if (fail !== undefined) return done({ code: fail.code, details: fail.message });
          const a = answer(call.request, call.metadata);
          if ('ok' in a) done(null, a.ok);
          else done({ code: a.code, details: a.message });
        });
    }
    definition[`${HEALTH}Watch`] = method(`${HEALTH}Watch`, true);
    implementation[`${HEALTH}Watch`] = (call: grpc.ServerWritableStream<Buffer, Buffer>) =>
      this.serve(`${HEALTH}Watch`, call, (fail) => {
        if (fail !== undefined) return call.emit('error', { code: fail.code, details: fail.message });
        this.watch(call);
      });
    server.addService(definition, implementation);
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${this.host}:${this.port}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err === null ? resolve(port) : reject(err),
      ),
    );
    this.url = `http://${this.host}:${this.port}`;
    this.server = server;
  }

  /** Record the call, then apply faults: `run` gets the status to fail with, or undefined to answer. */
  private serve(
    path: string,
    call: grpc.ServerUnaryCall<Buffer, Buffer> | grpc.ServerWritableStream<Buffer, Buffer>,
    run: (fail?: { code: number; message: string }) => void,
  ): void {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(call.metadata.getMap())) headers[k] = typeof v === 'string' ? v : v.toString('base64');
    this.record({ method: 'POST', path, headers, body: call.request.toString('base64'), at: this.now() });
    if (!this.headersAccepted(headers)) return run({ code: UNAUTHENTICATED, message: 'devnet: this node requires credentials' });
    const f = this.faults;
    const go = (): void => {
      if (f.hang === true) {
        const release = (): void => run({ code: UNAVAILABLE, message: 'devnet fault cleared' });
        this.hung.add(release);
        call.on('cancelled', () => this.hung.delete(release));
        return;
      }
      if (f.status !== undefined) return run({ code: f.status, message: `devnet fault: gRPC status ${f.status}` });
      if (f.errorRate !== undefined && Math.random() < f.errorRate)
        return run({ code: UNAVAILABLE, message: 'devnet fault: node unavailable' });
      run();
    };
    if ((f.latencyMs ?? 0) > 0) setTimeout(go, f.latencyMs);
    else go();
  }

  /** The SDK's answer to a query pinned by x-cosmos-block-height metadata. */
  private atHeight(md: grpc.Metadata, answer: () => Answer): Answer {
    const asked = md.get('x-cosmos-block-height')[0];
    if (asked === undefined || asked === '' || asked === '0') return answer();
    const h = Number(asked.toString());
    const head = this.height();
    if (!Number.isInteger(h) || h < 0) return { code: INVALID_ARGUMENT, message: `invalid height ${asked.toString()}: invalid request` };
    if (h > head) return { code: INVALID_ARGUMENT, message: `invalid height ${h}; latest height ${head}: invalid height` };
    if (h < this.earliest()) {
      return {
        code: INVALID_ARGUMENT,
        message: `failed to load state at height ${h}; version does not exist (latest height: ${head}): invalid height`,
      };
    }
    return answer();
  }

  /**
   * GetNodeInfoResponse { default_node_info = 1: { network = 4, version = 5, moniker = 7 },
   * application_version = 2: { name = 1, app_name = 2, version = 3 } }.
   */
  private nodeInfo(): Buffer {
    const network = this.chain.network;
    return pb()
      .message(1, pb().string(4, this.networkId()).string(5, '0.38.12').string(7, this.name))
      .message(2, pb().string(1, network).string(2, `${network}d`).string(3, 'v0.50.9-devnet'))
      .finish();
  }

  /** QueryParamsResponse { params = 1: Params { the five auth parameters } }. */
  private authParams(): Answer {
    return { ok: pb().message(1, pb().uint(1, 256).uint(2, 7).uint(3, 10).uint(4, 590).uint(5, 1000)).finish() };
  }

  private blockByHeight(request: Buffer): Answer {
    let h: number;
    try {
      h = varint(request, 1) ?? 0;
    } catch {
      return { code: INVALID_ARGUMENT, message: 'invalid request' };
    }
    const head = this.height();
    if (h <= 0) return { code: INVALID_ARGUMENT, message: 'height must be greater than 0' };
    if (h > head) return { code: INVALID_ARGUMENT, message: 'requested block height is bigger then the chain length' };
    if (h < this.earliest()) return { code: UNKNOWN, message: `height ${h} is not available, lowest height is ${this.earliest()}` };
    return { ok: blockResponse(this.chain, this.networkId(), h) };
  }

  /** Health/Watch: SERVING now, and again at every new block, until the client cancels. */
  private watch(call: grpc.ServerWritableStream<Buffer, Buffer>): void {
    const serving = pb().uint(1, SERVING).finish();
    let seen = this.height();
    this.watching++;
    call.write(serving);
    const timer = setInterval(() => {
      const h = this.height();
      if (h === seen) return;
      seen = h;
      call.write(serving);
    }, WATCH_POLL_MS);
    const stop = (): void => {
      clearInterval(timer);
      this.watching = Math.max(0, this.watching - 1);
    };
    call.once('cancelled', stop);
    call.once('close', () => clearInterval(timer));
  }

  protected releaseHung(): void {
    for (const release of this.hung) release();
    this.hung.clear();
  }

  protected async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.hung.clear();
    if (server === undefined) return;
    server.forceShutdown();
    // Until the listening socket is gone the port cannot be bound again.
    await new Promise((r) => setImmediate(r));
  }
}

export default defineDevnetFamily({ kind: 'server', createNode: (setup) => new DevnetGrpcNode(setup) });
