import type { Redis } from 'ioredis';
import { catchError, defer, map, mergeMap, type Observable, of } from 'rxjs';
import { safeUrl } from '../../config/urls';
import { deadLetterStream, redriveLeaseKey } from '../../mapping/keys';
import type { Batch } from '../read/batches';
import { persist } from '../store/persist';
import { decodeRange, decodeStreamId, flatRecord, numberOrNull } from '../store/replies';
import { compareIds } from '../store/streamIds';
import { JSON_CONTENT_TYPE, type Body } from './body';
import { byStreamOrder, decodeBacklogEntry, encodeTraces, REDRIVABLE, type BacklogEntry, type BacklogItem, type BacklogReason } from './backlogEntry';

/**
 * A webhook's backlog in Redis (CONTRACT 4.4): its dead-lettered batches in the dead-letter stream
 * `connectors:{ID}:deadletter` (an entry's fields: `backlogEntry.ts`), and the lane's port to it.
 *
 * Invariants:
 * 1. A batch counts as "in the backlog" (and may be acknowledged) only once its entry is written.
 * 2. Entries are redriven oldest first: in stream order of the batch's first entry (the webhook-id's
 *    first half), whatever order they were dead-lettered in.
 * 3. Only the entries of the webhook's current index and URL, and only `exhausted`, `overflow` and
 *    `circuit` and `disabled` ones, are redriven automatically; `refused` ones wait for an operator.
 * 4. One replica at a time redrives (and probes) a webhook: a lease in Redis.
 * 5. An entry of the webhook (its index and current URL, whatever its reason, `refused` included)
 *    trimmed by the cap before it was delivered is reported once as dropped: found by the next
 *    scan, or at once when this replica's own append trimmed it (the stream was at its cap); one
 *    trimmed while it is being sent again is reported only if that send fails; one trimmed by the
 *    append that writes it anew (invariant 7) is never reported (it lives on under the new ID).
 * 6. `size()` counts every entry of the webhook's backlog this replica knows of (any reason): the
 *    ones it wrote, and the ones its scans found, less the ones it removed or found gone.
 * 7. An entry redriven and failed again is written anew (its `attempts` and `error` grown; a stream
 *    entry cannot be changed) before the old one is deleted, each write retried until it lands: it
 *    stays known, and redriven, whatever Redis refuses meanwhile (out of memory). A crash between the
 *    two leaves it twice, under one `webhook-id` (a receiver keeps one).
 */
export type { BacklogEntry, BacklogItem, BacklogReason } from './backlogEntry';

/** A stored body as the redrive sends it again: its text, content type (absent: JSON) and trace contexts. */
export type StoredBody = Pick<BacklogEntry, 'body' | 'traces' | 'cause'> & { readonly contentType?: string };

/** What a webhook's lane does with its backlog (one live implementation; marble tests pass fakes). */
export interface LaneBacklog {
  /** Appends the batch with the body it was (or would have been) sent with; completes once written (retrying while the data store is away). */
  append(batch: Batch, body: Body, reason: BacklogReason, error: string, attempts: number): Observable<unknown>;
  /** The webhook's redrivable entries, oldest first (read from the data store each time). */
  pending(): Observable<readonly BacklogItem[]>;
  /** The entry's stored body, or null when it is gone (delivered by a replica, replayed, purged or trimmed). */
  fetch(item: BacklogItem): Observable<StoredBody | null>;
  /** Delivered: deleted from the backlog. */
  remove(item: BacklogItem): Observable<unknown>;
  /** Failed again: it stays, its `attempts` and `error` updated (invariant 7). */
  failedAgain(item: BacklogItem, error: string, attempts: number): Observable<unknown>;
  /** Takes or renews this replica's lease on redriving the webhook; false while another holds it. */
  lease(): Observable<boolean>;
}

/** A backlog entry as the live backlog tracks it: with its reason, so that only some are redriven. */
interface Known extends BacklogItem {
  readonly redrivable: boolean;
}

export interface RedisBacklogOptions {
  readonly redis: Redis;
  readonly connectorId: string;
  readonly consumer: string;
  readonly index: number;
  readonly url: string;
  readonly maxLength: number;
  readonly retryMs: number;
  readonly leaseMs: number;
  /** Called once for every entry of this webhook found trimmed by the cap before it was delivered. */
  readonly onDropped: (item: BacklogItem) => void;
  /** Called on every failed write (retried until it lands): an append, a removal, a re-append. */
  readonly onWriteError?: (err: unknown) => void;
}

/**
 * The live backlog of one webhook. It keeps the webhook's entries it has seen (IDs and webhook-ids
 * only, never bodies) and reads the stream from where it stopped on every `pending()`: a scan costs
 * what was appended since the last one. An entry that disappeared below the stream's first ID was
 * trimmed by the cap (invariant 5); one that disappeared above it was delivered by a replica,
 * replayed or purged.
 */
export const redisBacklog = (o: RedisBacklogOptions): LaneBacklog & { readonly size: () => number } => {
  const stream = deadLetterStream(o.connectorId);
  const url = safeUrl(o.url);
  const leaseKey = redriveLeaseKey(o.connectorId, o.index);
  const persistHere = <A>(write: () => Promise<A>) => persist(o.retryMs, write, o.onWriteError);
  const known = new Map<string, Known>();
  /**
   * IDs this replica removed (delivered, or written anew) that a scan under way may still read:
   * never added again. Forgotten once a scan's cursor has passed them (no later scan reads them).
   */
  const removed = new Set<string>();
  /**
   * IDs fetched to be sent again and not yet settled (delivered, or failed again): one the cap trims
   * meanwhile may still be delivered, so it is not reported dropped now — `failedAgain` finds it gone
   * and reports it then, if it was not delivered.
   */
  const sending = new Set<string>();
  let cursor = '-';
  /** The stream's length at the last reading, plus this replica's appends since: near the cap, an append looks for what it trimmed. */
  let length = 0;
  /** The stream's first ID at the last reading: known entries below it were trimmed. */
  let head: string | null = null;
  const mine = (e: BacklogEntry) => e.webhook === o.index && e.url === url;
  const track = (id: string, webhookId: string, attempts: number, reason: string) => {
    if (!removed.has(id)) known.set(id, { id, webhookId, attempts, redrivable: REDRIVABLE.has(reason) });
  };
  const forget = (id: string) => {
    known.delete(id);
    removed.add(id);
  };
  const fields = (e: Pick<BacklogEntry, 'webhookId' | 'error' | 'attempts' | 'reason' | 'contentType' | 'traces' | 'cause' | 'points'>, body: string | Buffer): Array<string | Buffer> => [
    'webhook', String(o.index), 'url', url, 'webhookId', e.webhookId, 'error', e.error, 'attempts', String(e.attempts), 'body', body, 'reason', e.reason,
    // absent for JSON (CONTRACT 4.7: a missing one means application/json), as every entry before formats
    ...(e.contentType === JSON_CONTENT_TYPE ? [] : ['contentType', e.contentType]),
    ...(e.traces === '' ? [] : ['traces', e.traces]),
    // CONTRACT 4.7: an interrogation's or resend's request is sent again with its Webhook-Cause
    ...(e.cause === undefined ? [] : ['cause', e.cause]),
    ...(e.points === undefined ? [] : ['points', String(e.points)]),
  ];
  const xadd = async (f: Array<string | Buffer>): Promise<string> => decodeStreamId(await o.redis.xadd(stream, 'MAXLEN', '~', String(o.maxLength), '*', ...f));
  /** The entry as stored, or null when it is gone. */
  const read = async (id: string): Promise<BacklogEntry | null> => {
    const [entry] = decodeRange(await o.redis.xrange(stream, id, id));
    return entry === undefined ? null : decodeBacklogEntry(id, entry.fields);
  };
  /** The stream's first ID and length (XINFO STREAM; a missing stream has neither). */
  const readHead = async (): Promise<string | null> => {
    // no stream, no head (every entry is gone); any other failure is thrown, never taken for that
    const info = flatRecord(await o.redis.call('XINFO', 'STREAM', stream).catch((err: Error) => (/no such key/i.test(err.message) ? [] : Promise.reject(err))));
    const first = info['first-entry'];
    length = numberOrNull(info.length) ?? 0;
    head = Array.isArray(first) ? String(first[0]) : null;
    return head;
  };
  /** An entry found missing: trimmed by the cap when it lies before the stream's first entry (the cap trims from the head and never empties the stream); else delivered by a replica, replayed or purged by an operator. */
  const gone = async (item: BacklogItem, first?: string | null): Promise<boolean> => {
    if (!known.delete(item.id)) return false;
    const h = first === undefined ? await readHead() : first;
    if (h !== null && compareIds(item.id, h) < 0) o.onDropped(item);
    return true;
  };
  /** Every known entry below the stream's first ID was trimmed (invariant 5). */
  const trimmed = async (first: string | null): Promise<void> => {
    for (const item of [...known.values()]) if (!sending.has(item.id) && (first === null || compareIds(item.id, first) < 0)) await gone(item, first);
  };
  /**
   * Reads what was appended since the last scan and reports what the cap trimmed. One at a time:
   * a caller that comes while a scan runs gets that scan's result.
   */
  let scanning: Promise<void> | undefined;
  const scan = (): Promise<void> =>
    (scanning ??= (async () => {
      for (;;) {
        const page = decodeRange(await o.redis.xrange(stream, cursor === '-' ? '-' : `(${cursor}`, '+', 'COUNT', 500));
        for (const { id, fields: f } of page) {
          const e = decodeBacklogEntry(id, f);
          if (mine(e)) track(id, e.webhookId, e.attempts, e.reason);
        }
        if (page.length > 0) cursor = page[page.length - 1]!.id;
        if (page.length < 500) break;
      }
      for (const id of removed) if (cursor !== '-' && compareIds(id, cursor) <= 0) removed.delete(id);
      await trimmed(await readHead());
    })().finally(() => (scanning = undefined)));
  const redrivable = (): BacklogItem[] =>
    [...known.values()].filter((k) => k.redrivable).map(({ id, webhookId, attempts }) => ({ id, webhookId, attempts })).sort(byStreamOrder);
  return {
    size: () => known.size,
    append: (batch, body, reason, error, attempts) =>
      persistHere(async () => {
        const id = await xadd(fields({
          webhookId: batch.webhookId, error, attempts, reason, contentType: body.contentType, traces: encodeTraces(batch.traces ?? []), points: batch.size,
          ...(batch.cause === undefined ? {} : { cause: batch.cause }),
        }, body.bytes));
        // known from the moment it is written: if the cap trims it before it is delivered, it is reported
        track(id, batch.webhookId, attempts, reason);
        length++;
        return id;
      }).pipe(
        // at the cap this append may have trimmed entries: what it took is reported now, not at the next
        // scan (a failed look is left to that scan)
        mergeMap((id) => (length < o.maxLength ? of(id) : defer(async () => {
          const before = head;
          const first = await readHead();
          if (first !== before) await trimmed(first);
        }).pipe(catchError(() => of(null)), map(() => id)))),
      ),
    pending: () => defer(async () => (await scan(), redrivable())),
    fetch: (item) =>
      defer(async () => {
        const entry = await read(item.id);
        if (entry === null) await gone(item);
        else sending.add(item.id);
        return entry;
      }),
    remove: (item) =>
      persistHere(async () => {
        await o.redis.xdel(stream, item.id);
        forget(item.id);
        sending.delete(item.id);
      }),
    failedAgain: (item, error, attempts) =>
      persistHere(() => read(item.id)).pipe(
        mergeMap((e) => {
          if (e === null) return defer(() => (sending.delete(item.id), gone(item)));
          // invariant 7: written anew first (retried, say, while Redis is out of memory: the entry stays
          // known and in the stream meanwhile), then the old one deleted. It stays `sending` until then:
          // the new write's own trim may take the old entry (the oldest), and a scan meanwhile must not
          // report as dropped a batch that lives on under its new ID
          return persistHere(() => xadd(fields({ ...e, error, attempts }, e.body))).pipe(
            mergeMap((newId) => {
              track(newId, e.webhookId, attempts, e.reason);
              return persistHere(() => o.redis.xdel(stream, item.id));
            }),
            map(() => (forget(item.id), sending.delete(item.id))),
          );
        }),
      ),
    lease: () =>
      defer(async () => {
        const taken = await o.redis.set(leaseKey, o.consumer, 'PX', o.leaseMs, 'NX');
        if (taken === 'OK') return true;
        if ((await o.redis.get(leaseKey)) !== o.consumer) return false;
        await o.redis.pexpire(leaseKey, o.leaseMs);
        return true;
      }),
  };
};

/**
 * The dead-letter stream's entries from `from` (an XRANGE start: `-`, an ID, or `(ID` after it) to
 * `to` (an ID, or `+`), a page of `count` at a time: what the operator's commands walk, holding one
 * page of bodies at once.
 */
export async function* backlogPages(redis: Redis, connectorId: string, from = '-', count = 1000, to = '+'): AsyncGenerator<BacklogEntry[]> {
  let start = from;
  for (;;) {
    const page = decodeRange(await redis.xrange(deadLetterStream(connectorId), start, to, 'COUNT', count));
    if (page.length > 0) yield page.map(({ id, fields }) => decodeBacklogEntry(id, fields));
    if (page.length < count) return;
    start = `(${page[page.length - 1]!.id}`;
  }
}

/** A webhook entry of the dead-letter stream, for the operator commands: every entry, paged. */
export const readBacklog = async (redis: Redis, connectorId: string, from = '-'): Promise<BacklogEntry[]> => {
  const out: BacklogEntry[] = [];
  for await (const page of backlogPages(redis, connectorId, from)) out.push(...page);
  return out;
};
