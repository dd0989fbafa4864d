import type { Redis } from 'ioredis';
import { defer, map, type Observable, retry, timer } from 'rxjs';
import { safeUrl } from '../config/urls';
import { UPDATES_STREAM } from '../mapping/types';
import type { Batch } from './batches';
import { decodeAutoclaimReply, decodeReadReply } from './entries';
import type { StreamPort } from './reader';

export const groupName = (connectorId: string): string => `rest-outbound:${connectorId}`;
export const deadLetterStream = (connectorId: string): string => `connectors:${connectorId}:deadletter`;
export const DEADLETTER_MAXLEN = 10000;

/**
 * The live StreamPort. Reads go over `blocking`, a connection of their own (a blocked
 * XREADGROUP holds its connection); replies are decoded from their RESP2 shapes.
 */
export const redisStreamPort = (blocking: Redis, group: string, consumer: string): StreamPort => ({
  createGroup: (start) =>
    defer(() =>
      blocking.call('XGROUP', 'CREATE', UPDATES_STREAM, group, start, 'MKSTREAM').catch((e: Error) => {
        // BUSYGROUP: the group exists and is resumed where it stopped.
        if (/BUSYGROUP/.test(e.message)) return 'exists';
        throw e;
      }),
    ),
  readOwnPending: (after, count) =>
    defer(() => blocking.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', UPDATES_STREAM, after)).pipe(
      map((reply) => decodeReadReply(reply, UPDATES_STREAM)),
    ),
  readNew: (count, blockMs) =>
    defer(() =>
      blocking.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', UPDATES_STREAM, '>'),
    ).pipe(map((reply) => decodeReadReply(reply, UPDATES_STREAM))),
  claimIdle: (start, minIdleMs, count) =>
    defer(() => blocking.call('XAUTOCLAIM', UPDATES_STREAM, group, consumer, minIdleMs, start, 'COUNT', count)).pipe(
      map(decodeAutoclaimReply),
    ),
});

/** Boundaries of batches formed and not yet acknowledged (first ID → last ID), so that a restart re-forms them. */
export const batchesKey = (connectorId: string): string => `connectors:${connectorId}:batches`;

export const loadBatches = async (redis: Redis, connectorId: string): Promise<Map<string, string>> =>
  new Map(Object.entries(await redis.hgetall(batchesKey(connectorId))));

/** HSET of a new batch's boundaries, tried again every `retryMs` while the data store is away. */
export const recordWith = (redis: Redis, connectorId: string, retryMs: number) => (batch: { ids: readonly string[] }): Observable<unknown> =>
  defer(() => redis.hset(batchesKey(connectorId), batch.ids[0]!, batch.ids[batch.ids.length - 1]!)).pipe(retry({ delay: () => timer(retryMs) }));

/**
 * XACK and forgetting the batch's boundaries in one MULTI, tried again every `retryMs` while the
 * data store is away (until unsubscribed on stop).
 */
export const ackWith = (redis: Redis, group: string, connectorId: string, retryMs: number) => (ids: readonly string[]): Observable<unknown> =>
  defer(async () => {
    const replies = await redis.multi().xack(UPDATES_STREAM, group, ...ids).hdel(batchesKey(connectorId), ids[0]!).exec();
    const failed = replies?.find(([err]) => err !== null);
    if (replies === null || failed !== undefined) throw failed?.[0] ?? new Error('XACK transaction aborted');
    return replies;
  }).pipe(retry({ delay: () => timer(retryMs) }));

/** CONTRACT 4.2: fields url, webhookId, error, attempts, body; capped at MAXLEN ~ 10000. */
export const deadLetterWith = (redis: Redis, connectorId: string, retryMs: number) =>
  (webhook: { url: string }, batch: Batch, error: string, attempts: number): Observable<unknown> =>
    defer(() =>
      redis.xadd(
        deadLetterStream(connectorId), 'MAXLEN', '~', String(DEADLETTER_MAXLEN), '*',
        'url', safeUrl(webhook.url), 'webhookId', batch.webhookId, 'error', error, 'attempts', String(attempts), 'body', batch.body,
      ),
      // Tried until it lands (or the stop deadline cuts it): a batch whose dead-letter entry is not
      // written is not acknowledged, so it stays pending rather than being lost.
    ).pipe(retry({ delay: () => timer(retryMs) }));
