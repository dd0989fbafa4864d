import {
  concatMap, connect, defer, endWith, filter, ignoreElements, map, merge, mergeMap, Observable, of, type OperatorFunction, type SchedulerLike,
} from 'rxjs';
import { batches, toBatch, type Batch } from '../read/batches';
import { decodeEntry, type DecodedEntry, type StreamEntry } from '../read/entries';
import type { LaneResult } from '../webhook/lane';
import type { BatchRecord, DeliveryState } from '../read/deliveryState';
import type { ReadChunk } from '../read/reader';
import { partFor } from '../webhook/filter';
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
 * filtered webhook (CONTRACT 4.5; `partFor`): worked out once, where the entries are at hand.
 */
export const formBatch = (subscriptions: readonly WebhookSubscription[]) => {
  const filtered = subscriptions.filter((s) => s.webhook.filter !== undefined);
  return (entries: readonly DecodedEntry[], record?: BatchRecord): Batch => {
    const batch = toBatch(entries, record);
    if (filtered.length === 0) return batch;
    const parts = new Map<string, Batch | null>();
    for (const s of filtered) parts.set(s.key, partFor(s.webhook.filter!, entries, batch, record?.parts?.get(s.key)));
    return { ...batch, parts };
  };
};

/** What a new batch's record says of its filtered webhooks' parts: key and webhook-id of each that gets one. */
const recordedParts = (b: Batch): Array<readonly [string, string]> =>
  b.parts === undefined ? [] : [...b.parts].flatMap(([k, p]) => (p === null ? [] : [[k, p.webhookId] as const]));

type Decoded = { ok: true; entry: DecodedEntry } | { ok: false; id: string; reason: string };
type Item = { readonly kind: 'entry'; readonly d: Decoded } | { readonly kind: 'batch'; readonly ds: readonly Decoded[]; readonly record?: BatchRecord };

const isOk = (d: Decoded): d is Extract<Decoded, { ok: true }> => d.ok;
const decodeAll = (es: readonly StreamEntry[]): Decoded[] => es.map(decodeEntry);

/**
 * Chunks read → decoded points → batches (replayed entries re-formed as the batches they were,
 * never mixed with live ones) → recorded → one lane per webhook, in parallel → each webhook's
 * result marked → XACK once a batch is done at every webhook (with no webhook, at once). Entries
 * that do not decode are acknowledged at once (CONTRACT 4.2/4.3). Completes after the source
 * completes and every batch in flight is finished: the graceful stop.
 */
export const pushPipeline$ = (o: PipelineOptions) => (chunks$: Observable<ReadChunk>): Observable<PipelineEvent> =>
  chunks$.pipe(
    regroup(o.maxSize),
    map((u): Item => (u.kind === 'entry' ? { kind: 'entry', d: decodeEntry(u.entry) } : { kind: 'batch', ds: decodeAll(u.entries), ...(u.record ? { record: u.record } : {}) })),
    connect((items$) => {
      const keys = o.subscriptions.map((s) => s.key);
      const form = formBatch(o.subscriptions);
      const acked = (b: Batch) => o.state.ack(b.first, b.ids, keys).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: b.ids, reason: 'done' })));
      const undecodable$ = items$.pipe(
        // checked per item without an inner subscription: this runs for every entry read
        filter((i) => (i.kind === 'entry' ? !i.d.ok : i.ds.some((d) => !d.ok))),
        mergeMap((i) => (i.kind === 'entry' ? [i.d] : i.ds).filter((d): d is Extract<Decoded, { ok: false }> => !d.ok)),
        mergeMap((d) => {
          o.onUndecodable(d.id, d.reason);
          // on its own: its record (if its batch has one) stays until the rest of the batch is done
          return o.state.ack(null, [d.id], []).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: [d.id], reason: 'undecodable' })));
        }),
      );
      const fresh$ = items$.pipe(
        filter((i): i is Extract<Item, { kind: 'entry' }> => i.kind === 'entry'),
        map((i) => i.d),
        filter(isOk),
        map((d) => d.entry),
        batches(o.windowMs, o.maxSize, o.scheduler, form),
      );
      const replayed = items$.pipe(filter((i): i is Extract<Item, { kind: 'batch' }> => i.kind === 'batch'));
      const replayed$ = replayed.pipe(
        map((i) => ({ entries: i.ds.filter(isOk).map((d) => d.entry), record: i.record })),
        filter((r) => r.entries.length > 0),
        map((r) => form(r.entries, r.record)),
      );
      // A recorded batch of which no entry decodes: nothing to send, but its record must go.
      const emptyRecorded$ = replayed.pipe(
        filter((i) => i.record !== undefined && !i.ds.some(isOk)),
        mergeMap((i) => o.state.ack(i.record!.first, [], keys).pipe(ignoreElements())),
      );
      if (o.subscriptions.length === 0) return merge(undecodable$, emptyRecorded$, merge(replayed$, fresh$).pipe(mergeMap(acked)));
      const all$ = merge(replayed$, fresh$).pipe(
        // CONTRACT 4.3: a batch goes out only once its boundaries are recorded (in order, one at a time:
        // a record is one HSET; while the data store is away nothing is read anyway).
        concatMap((b) => (b.recorded ? of(b) : o.state.record(b.ids, recordedParts(b)).pipe(ignoreElements(), endWith(b)))),
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
