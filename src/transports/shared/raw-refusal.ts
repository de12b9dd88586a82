// The one writer of refusals on a raw socket, before any HTTP response object exists:
// requests Node's parser refused (oversized headers, malformed requests) and WebSocket
// upgrades the gateway refuses. An HTTP/1.1 answer in the error table's shape, then the
// connection closes.

import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayError } from '../../errors.js';
import { JSONRPC_2, type RpcWriter } from '../../jsonrpc/dialect.js';
import type { ErrorStyle } from '../../plugin/contract.js';
import { errorText } from './answers.js';

/** `rpc`: the endpoint's JSON-RPC dialect; 2.0 where no endpoint is known yet. */
export function refuseSocket(socket: Duplex, err: GatewayError, style: ErrorStyle = 'rest', rpc: RpcWriter = JSONRPC_2): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = errorText(err, style, rpc);
  let extra = '';
  if (err.headers !== undefined) for (const k in err.headers) extra += `${k}: ${err.headers[k] as string}\r\n`;
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`,
  );
}
