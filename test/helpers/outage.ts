import type { Redis } from 'ioredis';
import { eventually } from './cli';

/**
 * What a fault test asserts before its outcome (a fault test that never caused its fault tests
 * nothing): the webhooks' states as `GET /api/webhooks` shows them, and the backlog's entries as the
 * dead-letter stream holds them.
 */
export interface WebhookStatus {
  readonly index: number;
  readonly state: string;
  readonly backlog: number;
}

export const webhookStates = async (base: string): Promise<WebhookStatus[]> =>
  ((await (await fetch(`${base}/api/webhooks`)).json()) as { webhooks: WebhookStatus[] }).webhooks;

/** A dead-letter entry's fields, by name. */
export type StoredEntry = Readonly<Record<string, string>> & { readonly id: string };

export const backlogEntries = async (client: Redis, id: string): Promise<StoredEntry[]> =>
  (await client.xrange(`connectors:${id}:deadletter`, '-', '+')).map(([entryId, fields]) => {
    const o: Record<string, string> = { id: entryId };
    for (let i = 0; i + 1 < fields.length; i += 2) o[fields[i]!] = fields[i + 1]!;
    return o as StoredEntry;
  });

/**
 * Calls `step` (which appends a little to the stream) every `everyMs` until `done` says so, with a
 * bound on time: the fault took effect while batches kept coming.
 */
export const keepProducingUntil = async (step: () => Promise<unknown>, done: () => Promise<boolean>, what: string, everyMs = 150, timeoutMs = 30000): Promise<void> => {
  await eventually(async () => {
    if (await done()) return true;
    await step();
    await new Promise((r) => setTimeout(r, everyMs));
    return undefined;
  }, timeoutMs, what);
};
