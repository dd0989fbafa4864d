import type { Redis } from 'ioredis';
import { defer, map, type Observable } from 'rxjs';
import { safeUrl } from '../../config/urls';
import { batchesKey, UPDATES_STREAM } from '../../mapping/keys';
import { groupCommit } from '../store/groupCommit';
import { persist } from '../store/persist';
import { compareIds } from '../store/streamIds';

/**
 * What must survive a crash of the push side (CONTRACT 4.3): which batches were formed from which
 * entries, and which webhooks already have each of them. One hash per connector,
 * `connectors:{ID}:batches`:
 *
 *   field `{first}`          → `{last}`   the batch of entries first..last (stream IDs) was formed
 *   field `{first}|{webhook}` → `1`       that webhook has it (answered 2xx, or it is in its backlog)
 *   field `{first}#{webhook}` → `{a}_{b}` a filtered webhook's part of it went out as webhook-id
 *                                          `{a}_{b}` (written with the record; CONTRACT 4.5)
 *
 * Invariants (each has a test in test/streams.deliveryState.test.ts or the push tests):
 * 1. A batch is recorded before its first request goes out (`record` completes first), so every
 *    batch any webhook may have seen can be re-formed with its original entries and webhook-id.
 * 2. A webhook's mark is written before the batch can be acknowledged, so an acknowledgement
 *    (which deletes the record and its marks in the same MULTI as the XACK) always comes last:
 *    nothing written for a batch can land after its deletion, and no record outlives its entries.
 * 3. After a restart, a claim or a reconnection, the records are read back (`load`): a re-formed
 *    batch goes only to the webhooks without a mark, under its original webhook-id.
 * 4. Records whose entries are no longer pending anywhere are forgotten (`forgetSettled`): a
 *    record left behind (e.g. its batch was acknowledged by a replica with another configuration)
 *    cannot pile up.
 */
export interface BatchRecord {
  readonly first: string;
  readonly last: string;
  /** Webhook keys (see `webhookKey`) that have the batch. */
  readonly done: ReadonlySet<string>;
  /** Filtered webhooks' parts as recorded: webhook key → webhook-id. */
  readonly parts?: ReadonlyMap<string, string>;
}

export type BatchRecords = ReadonlyMap<string, BatchRecord>;

export interface DeliveryState {
  /** Every recorded batch not yet acknowledged, by first ID. */
  load(): Observable<BatchRecords>;
  /** Records a new batch's boundaries, and its filtered webhooks' parts (key, webhook-id); completes once written. */
  record(ids: readonly string[], parts?: ReadonlyArray<readonly [string, string]>): Observable<unknown>;
  /** Records that the webhook `key` has the batch starting at `first`; completes once written. */
  markDone(first: string, key: string): Observable<unknown>;
  /**
   * XACK of the entries, and the record `first` with every mark of it deleted, in one MULTI;
   * `first` null for entries that belong to no record (one acknowledged on its own).
   */
  ack(first: string | null, ids: readonly string[], keys: readonly string[]): Observable<unknown>;
  /** Deletes records (and marks) of batches every entry of which is settled (see `Settled`). */
  forgetSettled(settled: Settled): Observable<number>;
}

/**
 * Entries known to be acknowledged, from one XPENDING/XINFO reading: those before the oldest
 * pending entry, or, when nothing is pending, every entry up to the group's last delivered ID.
 * (An entry before the oldest pending one has been delivered to the group, as the group reads in
 * order, and is not pending: it is acknowledged. A batch recorded after the reading is made of
 * pending or newer entries, so it is never taken for settled.)
 */
export type Settled = { readonly before: string } | { readonly upTo: string };

const isSettled = (last: string, s: Settled): boolean =>
  'before' in s ? compareIds(last, s.before) < 0 : compareIds(last, s.upTo) <= 0;

/**
 * A webhook as the delivery records know it: its index and its URL without user information or
 * query (CONTRACT 4.4: "URLs are compared without user information and query"). A configuration
 * that moves or changes a webhook makes it another webhook.
 */
export const webhookKey = (index: number, url: string): string => `${index} ${safeUrl(url)}`;


/** Turns the hash into records; a mark without its record (never written so) is ignored. Total. */
export const decodeRecords = (hash: Record<string, string>): Map<string, BatchRecord> => {
  const records = new Map<string, { first: string; last: string; done: Set<string>; parts?: Map<string, string> }>();
  const entries = Object.entries(hash);
  // the records first, then their marks and parts (a hash has no order)
  for (const [field, value] of entries) if (!/[|#]/.test(field)) records.set(field, { first: field, last: value, done: new Set() });
  for (const [field, value] of entries) {
    const bar = field.search(/[|#]/);
    const r = records.get(field.slice(0, bar));
    if (bar < 0 || r === undefined) continue;
    if (field[bar] === '|') r.done.add(field.slice(bar + 1));
    else (r.parts ??= new Map()).set(field.slice(bar + 1), value);
  }
  return records;
};

/**
 * Every write retries every `retryMs` while it fails — the data store away, or out of memory
 * (CONTRACT 6.6) — until it lands or is unsubscribed (e.g. by the stop deadline); `onWriteError`
 * hears of each failure, with the kind of write.
 */
export const redisDeliveryState = (
  redis: Redis, connectorId: string, group: string, retryMs: number, onWriteError: (write: 'delivery record' | 'acknowledgement', err: unknown) => void = () => undefined,
): DeliveryState => {
  const recordWrite = <A>(write: () => Promise<A>) => persist(retryMs, write, (err) => onWriteError('delivery record', err));
  const ackWrite = <A>(write: () => Promise<A>) => persist(retryMs, write, (err) => onWriteError('acknowledgement', err));
  const key = batchesKey(connectorId);
  const marks = groupCommit(retryMs, (fields: readonly string[]) => redis.hset(key, ...fields.flatMap((f) => [f, '1'])), (err) => onWriteError('delivery record', err));
  /** Mark and part fields loaded for a batch (of webhooks the current configuration may not know): deleted with it. */
  const loadedMarks = new Map<string, readonly string[]>();
  /** A record's mark and part fields. */
  // Stryker disable next-line ArrayDeclaration: an extra field name deletes nothing
  const fieldsOf = (r: BatchRecord): string[] => [...[...r.done].map((k) => `${r.first}|${k}`), ...[...(r.parts?.keys() ?? [])].map((k) => `${r.first}#${k}`)];
  return {
    load: () =>
      defer(() => redis.hgetall(key)).pipe(
        map((hash) => {
          const records = decodeRecords(hash);
          for (const r of records.values()) {
            const fields = fieldsOf(r);
            // Stryker disable next-line ConditionalExpression,EqualityOperator: memory only (an empty list deletes nothing)
            if (fields.length > 0) loadedMarks.set(r.first, fields);
          }
          return records;
        }),
      ),
    record: (ids, parts = []) =>
      recordWrite(() => redis.hset(key, ids[0]!, ids[ids.length - 1]!, ...parts.flatMap(([k, id]) => [`${ids[0]!}#${k}`, id]))),
    // one HSET for the marks asked for while the one before was on its way (`groupCommit`)
    markDone: (first, webhook) => marks(`${first}|${webhook}`),
    ack: (first, ids, keys) =>
      ackWrite(async () => {
        const tx = redis.multi();
        if (ids.length > 0) tx.xack(UPDATES_STREAM, group, ...ids);
        // Stryker disable next-line ConditionalExpression: with no record (first null) the fields would be "null…", which no record has
        if (first !== null) {
          // Stryker disable next-line ArrayDeclaration: an extra field name deletes nothing
          tx.hdel(key, ...new Set([first, ...keys.flatMap((k) => [`${first}|${k}`, `${first}#${k}`]), ...(loadedMarks.get(first) ?? [])]));
        }
        const replies = await tx.exec();
        // Stryker disable next-line OptionalChaining: EXEC answers null only under WATCH, which this transaction does not use
        const failed = replies?.find(([err]) => err !== null);
        // Stryker disable next-line ConditionalExpression,OptionalChaining,StringLiteral: as above
        if (replies === null || failed !== undefined) throw failed?.[0] ?? new Error('XACK transaction aborted');
        // Stryker disable next-line ConditionalExpression,EqualityOperator: memory only
        if (first !== null) loadedMarks.delete(first);
        return replies;
      }),
    forgetSettled: (settled) =>
      defer(async () => {
        const records = decodeRecords(await redis.hgetall(key));
        const stale = [...records.values()].filter((r) => isSettled(r.last, settled));
        const fields = stale.flatMap((r) => [r.first, ...fieldsOf(r)]);
        if (fields.length > 0) await redis.hdel(key, ...fields);
        return stale.length;
      }),
  };
};
