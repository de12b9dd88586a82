// What an attempt on a node can end in besides an answer, as the attempt loop and the
// breakers read it: the node failed (counted by its breaker), the node asked for less
// (a 429: backed off, never counted), or the gateway itself gave up on the call.

/** Thrown inside a breaker's action for an answer or a transport failure that blames the node. */
export class NodeFailure extends Error {
  constructor(
    readonly reason: 'timeout' | 'connect' | 'too-large' | 'io' | 'status' | 'garbage',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'NodeFailure';
  }

  /** Nothing reached the node: a call that must not be sent twice may still go elsewhere. */
  get unsent(): boolean {
    return this.reason === 'connect';
  }
}

/**
 * A node answered HTTP 401 or 407 (gRPC UNAUTHENTICATED): it refused the gateway's own
 * credentials (its `headers`, its URL's token). Clients authenticate to the gateway,
 * never to the node, so this is never the chain's answer: the node failed, and the
 * call goes elsewhere; its text (a provider's words about our token) is not relayed.
 */
export function refusedCredentials(status: number): NodeFailure | undefined {
  return status === 401 || status === 407
    ? new NodeFailure('status', `node refused the gateway's credentials (HTTP ${status})`)
    : undefined;
}

/** Thrown for a 429 from a node: retried elsewhere, never counted by the breaker. */
export class NodeThrottled extends Error {
  constructor() {
    super('node answered 429');
    this.name = 'NodeThrottled';
  }
}

/** The caller gave up on the call (its client left, or its deadline passed): not the node's fault. */
export class CallAborted extends Error {
  constructor() {
    super('call aborted by the gateway');
    this.name = 'CallAborted';
  }
}

/** What a cancelled attempt stops: its request to the node. */
export interface Cancellable {
  cancel(): void;
}

/**
 * The gateway giving up on an attempt (a hedge that lost) without an AbortController:
 * one small object per hedged call, and the request it stops registers itself, not a
 * listener closure. Cancelling is final; an attempt bound after it is stopped at once.
 */
export class Cancel {
  private target: Cancellable | undefined;
  private done = false;

  get cancelled(): boolean {
    return this.done;
  }

  bind(target: Cancellable): void {
    if (this.done) target.cancel();
    else this.target = target;
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    const t = this.target;
    this.target = undefined;
    t?.cancel();
  }
}
