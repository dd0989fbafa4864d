import type { Redis } from 'ioredis';
import { defer, type Observable } from 'rxjs';
import { safeUrl } from '../../config/urls';
import { deadLetterStream, redriveLeaseKey } from '../../mapping/keys';
import type { Batch } from '../read/batches';
import { flatRecord } from '../store/replies';
import { compareIds } from '../store/streamIds';
import { persist } from '../store/persist';
import type { EntryTrace } from '../../telemetry/tracing';

/**
 * A webhook's backlog (CONTRACT 4.4): its dead-lettered batches, kept in the dead-letter stream
 * `connectors:{ID}:deadletter`, one entry per batch and webhook, with fields `webhook` (index),
 * `url` (without user information or query), `webhookId`, `error`, `attempts`, `body`, `reason`,
 * and `traces` when the batch's entries carried trace contexts (CONTRACT 9: a redriven or replayed
 * request links to them as the first attempt did): `{entry id} {traceparent}` pairs, space-separated.
 *
 * Invariants:
 * 1. A batch counts as "in the backlog" (and may be acknowledged) only once its entry is written.
 * 2. Entries are redriven oldest first: in stream order of the batch's first entry (the webhook-id's
 *    first half), whatever order they were dead-lettered in.
 * 3. Only the entries of the webhook's current index and URL, and only `exhausted`, `overflow` and
 *    `circuit` and `disabled` ones, are redriven automatically; `refused` ones wait for an operator.
 * 4. One replica at a time redrives (and probes) a webhook: a lease in Redis.
 * 5. An entry of the webhook (its index and current URL, whatever its reason, `refused` included)
 *    trimmed by the cap before it was delivered is reported once as dropped.
 * 6. `size()` counts every entry of the webhook's backlog this replica knows of (any reason): the
 *    ones it wrote, and the ones its scans found, less the ones it removed or found gone.
 */
export type BacklogReason = 'exhausted' | 'overflow' | 'circuit' | 'refused' | 'disabled';

export const REDRIVABLE: ReadonlySet<string> = new Set<BacklogReason>(['exhausted', 'overflow', 'circuit', 'disabled']);

/** One backlog entry as the redrive knows it (the body is fetched when it is sent). */
export interface BacklogItem {
  /** The entry's ID in the dead-letter stream. */
  readonly id: string;
  readonly webhookId: string;
  readonly attempts: number;
}

/** A backlog entry as the live backlog tracks it: with its reason, so that only some are redriven. */
interface Known extends BacklogItem {
  readonly redrivable: boolean;
}

export interface BacklogEntry extends BacklogItem {
  readonly webhook: number | null;
  readonly url: string;
  readonly error: string;
  readonly reason: string;
  readonly body: string;
  /** The batch's trace contexts, as stored (`traces`); empty when it has none. */
  readonly traces: string;
}

/** What a webhook's lane does with its backlog (one live implementation; marble tests pass fakes). */
export interface LaneBacklog {
  /** Appends the batch; completes once written (retrying while the data store is away). */
  append(batch: Batch, reason: BacklogReason, error: string, attempts: number): Observable<unknown>;
  /** The webhook's redrivable entries, oldest first (read from the data store each time). */
  pending(): Observable<readonly BacklogItem[]>;
  /** The entry's body, or null when it is gone (delivered by a replica, replayed, purged or trimmed). */
  fetch(item: BacklogItem): Observable<Pick<BacklogEntry, 'body' | 'traces'> | null>;
  /** Delivered: deleted from the backlog. */
  remove(item: BacklogItem): Observable<unknown>;
  /** Failed again: it stays, its `attempts` and `error` updated. */
  failedAgain(item: BacklogItem, error: string, attempts: number): Observable<unknown>;
  /** Takes or renews this replica's lease on redriving the webhook; false while another holds it. */
  lease(): Observable<boolean>;
}


/**
 * A backlog entry as a batch to send again: its original webhook-id and body (CONTRACT 4.4). The
 * one way from an entry to a batch, for the lane's redrive and the operator's replay alike; it is
 * recorded already and goes to its own webhook only.
 */
export const backlogBatch = (item: Pick<BacklogItem, 'id' | 'webhookId'>, body: string, size = 0, traces = ''): Batch => {
  const batch: Batch = { webhookId: item.webhookId, first: firstOf(item.webhookId) || item.id, ids: [], body, size, recorded: true, done: new Set() };
  return traces === '' ? batch : { ...batch, traces: decodeTraces(traces) };
};

/** How many data points a stored body holds (0 when it is not a body of ours). */
export const bodyPoints = (body: string): number => {
  try {
    const points = (JSON.parse(body) as { datapoints?: unknown }).datapoints;
    return Array.isArray(points) ? points.length : 0;
  } catch {
    return 0;
  }
};

/** `traces` as stored: `{id} {traceparent}` pairs, space-separated. */
export const encodeTraces = (traces: readonly EntryTrace[]): string => traces.map((t) => `${t.id} ${t.traceparent}`).join(' ');

const decodeTraces = (text: string): EntryTrace[] => {
  const words = text.split(' ');
  const out: EntryTrace[] = [];
  for (let i = 0; i + 1 < words.length; i += 2) out.push({ id: words[i]!, traceparent: words[i + 1]! });
  return out;
};

/** The webhook-id's first stream ID: the batch's place in stream order. */
const firstOf = (webhookId: string): string => webhookId.split('_')[0] ?? '0-0';
const isStreamId = (s: string): boolean => /^[0-9]+-[0-9]+$/.test(s);

/** A dead-letter entry's flat field list as an entry; total (any field may be missing). */
export const decodeBacklogEntry = (id: string, fields: readonly string[]): BacklogEntry => {
  const f = flatRecord(fields as unknown[]);
  const webhook = f.webhook === undefined || !/^[0-9]+$/.test(String(f.webhook)) ? null : Number(f.webhook);
  return {
    id,
    webhook,
    url: String(f.url ?? ''),
    webhookId: String(f.webhookId ?? ''),
    error: String(f.error ?? ''),
    attempts: Number(f.attempts ?? 0) || 0,
    reason: String(f.reason ?? 'exhausted'),
    body: String(f.body ?? ''),
    traces: String(f.traces ?? ''),
  };
};

const INTERROGATION_ID = /^[gp]i-([0-9]+-[0-9]+)-([0-9]+)$/;

/**
 * A batch's place in stream order: its first stream ID; an interrogation's request (CONTRACT 4.6,
 * `gi-{P}-{k}`) sits just after the batches that begin at or before its `P` (the image holds their
 * effect), in `k` order.
 */
const placeOf = (webhookId: string): readonly [string, number, number] | undefined => {
  const m = INTERROGATION_ID.exec(webhookId);
  if (m !== null) return [m[1]!, 1, Number(m[2])];
  const first = firstOf(webhookId);
  return isStreamId(first) ? [first, 0, 0] : undefined;
};

/** Oldest first, by the batch's place in stream order (invariant 2); entries without one last. */
export const byStreamOrder = (a: BacklogItem, b: BacklogItem): number => {
  const pa = placeOf(a.webhookId);
  const pb = placeOf(b.webhookId);
  if (pa === undefined || pb === undefined) return pa !== undefined ? -1 : pb !== undefined ? 1 : compareIds(a.id, b.id);
  return compareIds(pa[0], pb[0]) || pa[1] - pb[1] || pa[2] - pb[2] || compareIds(a.id, b.id);
};

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
 * The live backlog of one webhook. It keeps the webhook's redrivable entries it has seen (IDs and
 * webhook-ids only, never bodies) and reads the stream from where it stopped on every `pending()`:
 * a scan costs what was appended since the last one. An entry that disappeared below the stream's
 * first ID was trimmed by the cap (invariant 5); one that disappeared above it was delivered by a
 * replica, replayed or purged.
 */
export const redisBacklog = (o: RedisBacklogOptions): LaneBacklog & { readonly size: () => number } => {
  const stream = deadLetterStream(o.connectorId);
  const url = safeUrl(o.url);
  const leaseKey = redriveLeaseKey(o.connectorId, o.index);
  const persistHere = <A>(write: () => Promise<A>) => persist(o.retryMs, write, o.onWriteError);
  const known = new Map<string, Known>();
  /**
   * IDs this replica removed (delivered, or re-appended) that a scan under way may still read:
   * never added again. Forgotten once a scan's cursor has passed them (no later scan reads them).
   */
  const removed = new Set<string>();
  let cursor = '-';
  const mine = (e: BacklogEntry) => e.webhook === o.index && e.url === url;
  const track = (id: string, webhookId: string, attempts: number, reason: string) => {
    if (!removed.has(id)) known.set(id, { id, webhookId, attempts, redrivable: REDRIVABLE.has(reason) });
  };
  const forget = (id: string) => {
    known.delete(id);
    removed.add(id);
  };
  const fields = (webhookId: string, error: string, attempts: number, body: string, reason: string, traces: string): string[] => [
    'webhook', String(o.index), 'url', url, 'webhookId', webhookId, 'error', error, 'attempts', String(attempts), 'body', body, 'reason', reason,
    ...(traces === '' ? [] : ['traces', traces]),
  ];
  const xadd = (batch: Pick<Batch, 'webhookId' | 'body' | 'traces'>, reason: string, error: string, attempts: number) =>
    o.redis.xadd(stream, 'MAXLEN', '~', String(o.maxLength), '*', ...fields(batch.webhookId, error, attempts, batch.body, reason, encodeTraces(batch.traces ?? [])));
  const firstId = async (): Promise<string | null> => {
    const first = flatRecord(await o.redis.call('XINFO', 'STREAM', stream).catch(() => []))['first-entry'];
    return Array.isArray(first) ? String(first[0]) : null;
  };
  /**
   * An entry found missing: trimmed by the cap when it lies before the stream's first entry (the
   * cap trims from the head and never empties the stream); else delivered by a replica, replayed
   * or purged by an operator.
   */
  const gone = async (item: BacklogItem, first?: string | null): Promise<boolean> => {
    if (!known.delete(item.id)) return false;
    const head = first === undefined ? await firstId() : first;
    if (head !== null && compareIds(item.id, head) < 0) o.onDropped(item);
    return true;
  };
  /**
   * Reads what was appended since the last scan and reports what the cap trimmed. One at a time:
   * a caller that comes while a scan runs gets that scan's result.
   */
  let scanning: Promise<void> | undefined;
  const scan = (): Promise<void> =>
    (scanning ??= (async () => {
      for (;;) {
        const page = (await o.redis.xrange(stream, cursor === '-' ? '-' : `(${cursor}`, '+', 'COUNT', 500)) as Array<[string, string[]]>;
        for (const [id, fields] of page) {
          const e = decodeBacklogEntry(id, fields);
          if (mine(e)) track(id, e.webhookId, e.attempts, e.reason);
        }
        if (page.length > 0) cursor = page[page.length - 1]![0];
        if (page.length < 500) break;
      }
      for (const id of removed) if (cursor !== '-' && compareIds(id, cursor) <= 0) removed.delete(id);
      const head = await firstId();
      for (const item of [...known.values()]) if (head === null || compareIds(item.id, head) < 0) await gone(item, head);
    })().finally(() => (scanning = undefined)));
  const redrivable = (): BacklogItem[] =>
    [...known.values()].filter((k) => k.redrivable).map(({ id, webhookId, attempts }) => ({ id, webhookId, attempts })).sort(byStreamOrder);
  return {
    size: () => known.size,
    append: (batch, reason, error, attempts) =>
      persistHere(async () => {
        const id = await xadd(batch, reason, error, attempts);
        // known from the moment it is written: if the cap trims it before it is delivered, a scan reports it
        if (id !== null) track(id, batch.webhookId, attempts, reason);
        return id;
      }),
    pending: () => defer(async () => (await scan(), redrivable())),
    fetch: (item) =>
      defer(async () => {
        const [entry] = (await o.redis.xrange(stream, item.id, item.id)) as Array<[string, string[]]>;
        if (entry === undefined) await gone(item);
        return entry === undefined ? null : decodeBacklogEntry(item.id, entry[1]);
      }),
    remove: (item) =>
      persistHere(async () => {
        await o.redis.xdel(stream, item.id);
        forget(item.id);
      }),
    failedAgain: (item, error, attempts) =>
      persistHere(async () => {
        const [entry] = (await o.redis.xrange(stream, item.id, item.id)) as Array<[string, string[]]>;
        if (entry === undefined) return gone(item);
        const e = decodeBacklogEntry(item.id, entry[1]);
        // re-appended with the grown count (a stream entry cannot be changed); its place in the
        // redrive order is its batch's, not its entry's
        const replies = await o.redis.multi().xdel(stream, item.id).xadd(
          stream, 'MAXLEN', '~', String(o.maxLength), '*', ...fields(e.webhookId, error, attempts, e.body, e.reason, e.traces),
        ).exec();
        const newId = replies?.[1]?.[1];
        forget(item.id);
        if (typeof newId === 'string') track(newId, e.webhookId, attempts, e.reason);
        return true;
      }),
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

/** A webhook entry of the dead-letter stream, for the operator commands: every entry, paged. */
export const readBacklog = async (redis: Redis, connectorId: string, from = '-'): Promise<BacklogEntry[]> => {
  const out: BacklogEntry[] = [];
  let start = from;
  for (;;) {
    const page = (await redis.xrange(deadLetterStream(connectorId), start, '+', 'COUNT', 1000)) as Array<[string, string[]]>;
    for (const [id, fields] of page) out.push(decodeBacklogEntry(id, fields));
    if (page.length < 1000) return out;
    start = `(${page[page.length - 1]![0]}`;
  }
};
