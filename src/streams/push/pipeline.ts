import {
  concatMap, connect, defer, endWith, filter, ignoreElements, map, merge, mergeMap, Observable, of, type OperatorFunction, type SchedulerLike,
} from 'rxjs';
import { batches, toBatch, type Batch } from '../read/batches';
import { decodeEntry, type DecodedEntry, type StreamEntry } from '../read/entries';
import type { LaneResult } from '../webhook/lane';
import type { BatchRecord, DeliveryState } from '../read/deliveryState';
import type { ReadChunk } from '../read/reader';
import { partFor } from '../webhook/filter';
import { decodePart } from '../webhook/report';
import type { ReportState } from '../webhook/reportState';
import { regroup } from '../read/regroup';
import type { WebhookSubscription } from '../webhook/subscription';

export interface PipelineOptions {
  /** One per configured webhook, in order (`makeSubscriptions`). */
  readonly subscriptions: readonly WebhookSubscription[];
  readonly windowMs: number;
  readonly maxSize: number;
  /** Builds a subscription's lane (see `webhookLane`). */
  readonly lane: (subscription: WebhookSubscription) => OperatorFunction<Batch, LaneResult>;
  /** Records, marks and acknowledgements (see `DeliveryState`); each retries by itself until it lands or is unsubscribed. */
  readonly state: Pick<DeliveryState, 'record' | 'markDone' | 'ack'>;
  /** With webhooks that have `report` (CONTRACT 4.8): records a new batch with their decision, in place of `state.record`. */
  readonly report?: Pick<ReportState, 'record'>;
  readonly onUndecodable: (id: string, reason: string) => void;
  readonly onBatch?: (batch: Batch) => void;
  readonly scheduler?: SchedulerLike;
}

export type PipelineEvent =
  | { readonly kind: 'acked'; readonly ids: readonly string[]; readonly reason: 'done' | 'undecodable' }
  | { readonly kind: 'lane'; readonly result: LaneResult };

/**
 * Done once every lane reported a batch: the batch is passed on exactly once, when the last
 * webhook's lane finished with it (delivered, dead-lettered or skipped).
 */
export const whenAllDone = (lanes: number): OperatorFunction<LaneResult, Batch> => (results$) =>
  new Observable<Batch>((subscriber) => {
    const remaining = new Map<Batch, number>();
    return results$.subscribe({
      next: (r) => {
        const left = (remaining.get(r.batch) ?? lanes) - 1;
        if (left === 0) {
          remaining.delete(r.batch);
          subscriber.next(r.batch);
        } else remaining.set(r.batch, left);
      },
      error: (e) => subscriber.error(e),
      complete: () => subscriber.complete(),
    });
  });

/**
 * Makes each lane's result durable before it counts (invariant 2 of `DeliveryState`): a webhook
 * that finished a batch is marked as having it, so that after a crash, a stop or a claim only the
 * webhooks without the mark get it again. The last lane to finish needs no mark (the
 * acknowledgement that follows covers it), nor does a skipped one (it is marked already).
 */
export const markAsDone = (lanes: number, keys: readonly string[], markDone: DeliveryState['markDone']): OperatorFunction<LaneResult, LaneResult> =>
  (results$) =>
    defer(() => {
      const arrived = new Map<Batch, number>();
      return results$.pipe(
        mergeMap((r) => {
          const n = (arrived.get(r.batch) ?? 0) + 1;
          if (n === lanes) arrived.delete(r.batch);
          else arrived.set(r.batch, n);
          return r.outcome === 'skipped' || n === lanes ? of(r) : markDone(r.batch.first, keys[r.webhook]!).pipe(ignoreElements(), endWith(r));
        }),
      );
    });

/**
 * A batch of these entries (re-formed along its record, when it has one) with the part of each
 * filtered webhook (CONTRACT 4.5; `partFor`): worked out once, where the entries are at hand. A
 * webhook with `report` (4.8) gets its part from `withReport`, once its batch is decided.
 */
export const formBatch = (subscriptions: readonly WebhookSubscription[]) => {
  const filtered = subscriptions.filter((s) => s.webhook.filter !== undefined && s.webhook.report === undefined);
  const reporting = subscriptions.filter((s) => s.webhook.report !== undefined);
  return (entries: readonly DecodedEntry[], record?: BatchRecord): Batch => {
    const batch = toBatch(entries, record);
    if (filtered.length === 0 && (record === undefined || reporting.length === 0)) return batch;
    const parts = new Map<string, Batch | null>();
    for (const s of filtered) parts.set(s.key, partFor(s.webhook.filter!, entries, batch, record?.parts?.get(s.key)));
    return record === undefined ? { ...batch, parts } : withReport(reporting, { ...batch, parts }, entries, (key) => {
      const value = record.parts?.get(key);
      return value === undefined ? undefined : { value };
    });
  };
};

const EVERY_POINT = {};

/**
 * The batch with the part of each webhook with `report` (CONTRACT 4.8) as its record says
 * (`encodePart`; null: nothing, it is marked done with the record); a webhook of which the record
 * says nothing (recorded before it had `report`) gets every entry its filter matches.
 */
export const withReport = (
  reporting: readonly WebhookSubscription[], batch: Batch, entries: readonly DecodedEntry[],
  recorded: (key: string) => { readonly value: string; readonly entries?: readonly DecodedEntry[] } | null | undefined,
): Batch => {
  if (reporting.length === 0) return batch;
  const parts = new Map(batch.parts);
  for (const s of reporting) {
    const r = recorded(s.key);
    const filter = s.webhook.filter ?? EVERY_POINT;
    if (r === null) parts.set(s.key, null);
    else if (r === undefined) parts.set(s.key, partFor(filter, entries, batch));
    else if (r.entries !== undefined) parts.set(s.key, partFor(filter, r.entries, batch, r.value));
    else {
      const part = decodePart(r.value);
      parts.set(s.key, partFor(filter, entries.filter((e) => part.holds(e.id)), batch, r.value));
    }
  }
  return { ...batch, parts };
};

/** What a new batch's record says of its filtered webhooks' parts: key and webhook-id of each that gets one. */
const recordedParts = (b: Batch): Array<readonly [string, string]> =>
  b.parts === undefined ? [] : [...b.parts].flatMap(([k, p]) => (p === null ? [] : [[k, p.webhookId] as const]));

type Decoded = { ok: true; entry: DecodedEntry } | { ok: false; id: string; reason: string };
/** Live entries as read (a chunk), decoded; or a replayed batch's. */
type Item = { readonly kind: 'live'; readonly ds: readonly Decoded[] } | { readonly kind: 'batch'; readonly ds: readonly Decoded[]; readonly record?: BatchRecord };

const isOk = (d: Decoded): d is Extract<Decoded, { ok: true }> => d.ok;
/** The entries that decoded, in order. */
const okEntries = (ds: readonly Decoded[]): DecodedEntry[] => {
  const out: DecodedEntry[] = [];
  for (const d of ds) if (d.ok) out.push(d.entry);
  return out;
};
const decodeAll = (es: readonly StreamEntry[], keep: boolean): Decoded[] => es.map((e) => decodeEntry(e, keep));

/**
 * Chunks read → decoded points → batches (replayed entries re-formed as the batches they were,
 * never mixed with live ones) → recorded → one lane per webhook, in parallel → each webhook's
 * result marked → XACK once a batch is done at every webhook (with no webhook, at once). Entries
 * that do not decode are acknowledged at once (CONTRACT 4.2/4.3). Completes after the source
 * completes and every batch in flight is finished: the graceful stop.
 */
export const pushPipeline$ = (o: PipelineOptions) => (chunks$: Observable<ReadChunk>): Observable<PipelineEvent> => {
  const keep = o.report !== undefined && o.subscriptions.some((s) => s.webhook.report !== undefined);
  return chunks$.pipe(
    regroup(o.maxSize),
    // the parsed points are kept only where report by exception (CONTRACT 4.8) compares them
    map((u): Item => (u.kind === 'live' ? { kind: 'live', ds: decodeAll(u.entries, keep) } : { kind: 'batch', ds: decodeAll(u.entries, keep), ...(u.record ? { record: u.record } : {}) })),
    connect((items$) => {
      const keys = o.subscriptions.map((s) => s.key);
      const form = formBatch(o.subscriptions);
      const acked = (b: Batch) => o.state.ack(b.first, b.ids, keys).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: b.ids, reason: 'done' })));
      const undecodable$ = items$.pipe(
        // checked per chunk without an inner subscription: this runs for every chunk read
        filter((i) => i.ds.some((d) => !d.ok)),
        mergeMap((i) => i.ds.filter((d): d is Extract<Decoded, { ok: false }> => !d.ok)),
        mergeMap((d) => {
          o.onUndecodable(d.id, d.reason);
          // on its own: its record (if its batch has one) stays until the rest of the batch is done
          return o.state.ack(null, [d.id], []).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: [d.id], reason: 'undecodable' })));
        }),
      );
      // batches of live entries, carried a chunk at a time (CONTRACT 4.7 "Cost")
      const fresh$ = items$.pipe(
        filter((i): i is Extract<Item, { kind: 'live' }> => i.kind === 'live'),
        map((i) => okEntries(i.ds)),
        filter((es) => es.length > 0),
        batches(o.windowMs, o.maxSize, o.scheduler, (es) => es),
      );
      const replayed = items$.pipe(filter((i): i is Extract<Item, { kind: 'batch' }> => i.kind === 'batch'));
      const replayed$ = replayed.pipe(
        map((i) => ({ entries: okEntries(i.ds), record: i.record })),
        filter((r) => r.entries.length > 0),
      );
      // A recorded batch of which no entry decodes: nothing to send, but its record must go.
      const emptyRecorded$ = replayed.pipe(
        filter((i) => i.record !== undefined && !i.ds.some(isOk)),
        mergeMap((i) => o.state.ack(i.record!.first, [], keys).pipe(ignoreElements())),
      );
      if (o.subscriptions.length === 0) return merge(undecodable$, emptyRecorded$, merge(replayed$.pipe(map((r) => form(r.entries, r.record))), fresh$.pipe(map((es) => toBatch(es)))).pipe(mergeMap(acked)));
      const reporting = o.subscriptions.filter((s) => s.webhook.report !== undefined);
      /** CONTRACT 4.3: recorded before it goes out; with `report` (4.8), decided and recorded in one write. */
      const recordNew = (entries: readonly DecodedEntry[]): Observable<Batch> => {
        const b = form(entries);
        if (o.report === undefined || reporting.length === 0) return o.state.record(b.ids, recordedParts(b)).pipe(ignoreElements(), endWith(b));
        return o.report.record(entries, recordedParts(b)).pipe(map((decided) => withReport(reporting, b, entries, (key) => decided.get(key))));
      };
      const all$ = merge(replayed$.pipe(map((r) => (r.record !== undefined ? of(form(r.entries, r.record)) : recordNew(r.entries)))), fresh$.pipe(map(recordNew))).pipe(
        // CONTRACT 4.3: a batch goes out only once its boundaries are recorded (in order, one at a time:
        // a record is one write; while the data store is away nothing is read anyway).
        concatMap((b$) => b$),
        map((b) => {
          o.onBatch?.(b);
          return b;
        }),
      );
      const delivered$ = all$.pipe(
        connect((shared$) => {
          const results$ = merge(...o.subscriptions.map((s) => shared$.pipe(o.lane(s))));
          return results$.pipe(
            markAsDone(o.subscriptions.length, keys, o.state.markDone),
            connect((r$) =>
              merge(
                r$.pipe(map((result): PipelineEvent => ({ kind: 'lane', result }))),
                r$.pipe(whenAllDone(o.subscriptions.length), mergeMap(acked)),
              ),
            ),
          );
        }),
      );
      return merge(undecodable$, emptyRecorded$, delivered$);
    }),
  );
};
