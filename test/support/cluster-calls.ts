// Calls to a gateway run with server.workers above 1, as the workers tests make them:
// each POST on a connection of its own (node:cluster hands each new connection to one
// worker), and which workers answered, read from their request log lines.

import { request } from 'node:http';
import type { Served } from './serve.js';
import { until } from './until.js';

export interface Answer {
  readonly status: number;
  readonly json: unknown;
}

/** One POST on a connection of its own. */
export function callAlone(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** `n` calls, `concurrency` at a time. */
export async function hammer(n: number, concurrency: number, one: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) answers.push(await one(next++));
    }),
  );
  return answers;
}

export const count = (answers: readonly Answer[], status: number): number => answers.filter((a) => a.status === status).length;

/** Workers whose request log lines show since `since` (lines are written within 100 ms; waits for `lines` of them). */
export async function workersLogging(served: Served, lines: number, since = 0): Promise<Set<number>> {
  const read = (): Array<{ worker?: number }> =>
    served
      .out()
      .slice(since)
      .split('\n')
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => JSON.parse(l) as { worker?: number });
  // Too few lines: the callers' expectations say which workers are missing.
  await until(() => read().length >= lines, { what: `${lines} request lines are written`, timeoutMs: 2_500 }).catch(() => undefined);
  return new Set(read().map((l) => l.worker ?? -1));
}

/**
 * The workers whose request lines show since `since` (once `lines` of them are written).
 * The kernel, not the gateway, picks which worker accepts a connection and may give a
 * short burst to one: then `more` is sent until both have answered one, at most 100 more.
 */
export async function servedByBoth(served: Served, lines: number, since: number, more: () => Promise<Answer>): Promise<number[]> {
  let workers = await workersLogging(served, lines, since);
  for (let extra = 4; extra <= 100 && !(workers.has(0) && workers.has(1)); extra += 4) {
    await hammer(4, 4, more);
    workers = await workersLogging(served, lines + extra, since);
  }
  return [...workers].sort();
}
