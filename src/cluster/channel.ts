// One side of the IPC link between the primary process and one worker (node:cluster,
// `advanced` serialization, so tiers with Infinity and Maps cross as they are):
// requests answered by the other side's handler, and one-way notes. The link is
// ordered: a reply to a request proves every message sent before it was received.

/** What crosses the link; `nr` tells ours from prom-client's and Node's own messages. */
interface Envelope {
  readonly nr: 1;
  readonly type: string;
  readonly body?: unknown;
  /** A request's number (its reply carries it back); absent on a note. */
  readonly id?: number;
  readonly reply?: true;
  readonly error?: string;
}

export type Handler = (body: unknown) => unknown;

/** The other side is gone (exited, or the primary disconnected): pending requests fail with this. */
export class ChannelClosedError extends Error {
  constructor() {
    super('the other process of the cluster is gone');
    this.name = 'ChannelClosedError';
  }
}

function isEnvelope(m: unknown): m is Envelope {
  return typeof m === 'object' && m !== null && (m as { nr?: unknown }).nr === 1 && typeof (m as { type?: unknown }).type === 'string';
}

export class Channel {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly handlers = new Map<string, Handler>();
  private closed = false;

  constructor(private readonly post: (message: Envelope) => boolean | void) {}

  /** Answer requests and notes of `type`; a handler's value (or promise) is the reply. */
  handle(type: string, handler: Handler): void {
    this.handlers.set(type, handler);
  }

  request<T>(type: string, body?: unknown): Promise<T> {
    if (this.closed) return Promise.reject(new ChannelClosedError());
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.send({ nr: 1, type, body, id });
    });
  }

  /** One-way: nothing comes back. */
  note(type: string, body?: unknown): void {
    if (!this.closed) this.send({ nr: 1, type, body });
  }

  /** Feed a message the process received; false when it is not ours. */
  receive(message: unknown): boolean {
    if (!isEnvelope(message)) return false;
    if (message.reply === true) {
      const p = message.id === undefined ? undefined : this.pending.get(message.id);
      if (p === undefined) return true;
      this.pending.delete(message.id as number);
      if (message.error !== undefined) p.reject(new Error(message.error));
      else p.resolve(message.body);
      return true;
    }
    const handler = this.handlers.get(message.type);
    const id = message.id;
    if (id === undefined) {
      if (handler !== undefined) void Promise.resolve().then(() => handler(message.body));
      return true;
    }
    Promise.resolve()
      .then(() => {
        if (handler === undefined) throw new Error(`no handler for ${message.type}`);
        return handler(message.body);
      })
      .then(
        (body: unknown) => this.send({ nr: 1, type: message.type, id, reply: true, body }),
        (err: unknown) => this.send({ nr: 1, type: message.type, id, reply: true, error: (err as Error).message }),
      );
    return true;
  }

  /** The other side is gone: pending requests fail, later ones fail at once. */
  close(): void {
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new ChannelClosedError());
    this.pending.clear();
  }

  get open(): boolean {
    return !this.closed;
  }

  private send(message: Envelope): void {
    try {
      this.post(message);
    } catch {
      // The channel closed under us; the exit handler closes this side.
    }
  }
}
