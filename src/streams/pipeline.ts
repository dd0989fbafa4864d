import {
  connect, filter, ignoreElements, map, merge, mergeMap, Observable, of, type OperatorFunction, type SchedulerLike,
} from 'rxjs';
import type { Webhook } from '../config/managed';
import { batches, toBatch, type Batch } from './batches';
import { decodeEntry, type DecodedEntry, type StreamEntry } from './entries';
import type { LaneResult } from './deliver';
import type { ReadChunk } from './reader';
import { regroup } from './regroup';

export interface PipelineOptions {
  readonly webhooks: readonly Webhook[];
  readonly windowMs: number;
  readonly maxSize: number;
  /** Builds the lane of webhook `index` (see `webhookLane`). */
  readonly lane: (index: number, webhook: Webhook) => OperatorFunction<Batch, LaneResult>;
  /** Batches formed before a restart and not acknowledged: first ID → last ID. */
  readonly knownBatches: ReadonlyMap<string, string>;
  /** Records a new batch's boundaries (issued before its first attempt, not awaited); retries by itself. */
  readonly record: (batch: Batch) => Observable<unknown>;
  /** XACK (and forgets the recorded batch); expected to retry by itself until it succeeds or is unsubscribed. */
  readonly ack: (ids: readonly string[]) => Observable<unknown>;
  readonly onUndecodable: (id: string, reason: string) => void;
  readonly onBatch?: (batch: Batch) => void;
  readonly scheduler?: SchedulerLike;
}

export type PipelineEvent =
  | { readonly kind: 'acked'; readonly ids: readonly string[]; readonly reason: 'done' | 'undecodable' }
  | { readonly kind: 'lane'; readonly result: LaneResult };

/**
 * Done once every lane reported a batch: the batch is passed on exactly once, when the last
 * webhook's lane finished with it (delivered or dead-lettered).
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

type Decoded = { ok: true; entry: DecodedEntry } | { ok: false; id: string; reason: string };
type Item = { readonly kind: 'entry'; readonly d: Decoded } | { readonly kind: 'batch'; readonly ds: readonly Decoded[] };

const isOk = (d: Decoded): d is Extract<Decoded, { ok: true }> => d.ok;
const decodeAll = (es: readonly StreamEntry[]): Decoded[] => es.map(decodeEntry);

/**
 * Chunks read → decoded points → batches (replayed entries re-formed as the batches they were)
 * → one lane per webhook, in parallel → XACK once a batch is done at every webhook (with no
 * webhook, at once). Entries that do not decode are acknowledged at once (CONTRACT 4.2/4.3).
 * Completes after the source completes and every batch in flight is finished: the graceful stop.
 */
export const pushPipeline$ = (o: PipelineOptions) => (chunks$: Observable<ReadChunk>): Observable<PipelineEvent> =>
  chunks$.pipe(
    regroup(o.knownBatches),
    map((u): Item => (u.kind === 'entry' ? { kind: 'entry', d: decodeEntry(u.entry) } : { kind: 'batch', ds: decodeAll(u.entries) })),
    connect((items$) => {
      const undecodable$ = items$.pipe(
        // checked per item without an inner subscription: this runs for every entry read
        filter((i) => (i.kind === 'entry' ? !i.d.ok : i.ds.some((d) => !d.ok))),
        mergeMap((i) => (i.kind === 'entry' ? [i.d] : i.ds).filter((d): d is Extract<Decoded, { ok: false }> => !d.ok)),
        mergeMap((d) => {
          o.onUndecodable(d.id, d.reason);
          return o.ack([d.id]).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: [d.id], reason: 'undecodable' })));
        }),
      );
      const fresh$ = items$.pipe(
        filter((i): i is Extract<Item, { kind: 'entry' }> => i.kind === 'entry'),
        map((i) => i.d),
        filter(isOk),
        map((d) => d.entry),
        batches(o.windowMs, o.maxSize, o.scheduler),
      );
      const replayed$ = items$.pipe(
        filter((i): i is Extract<Item, { kind: 'batch' }> => i.kind === 'batch'),
        map((i) => i.ds.filter(isOk).map((d) => d.entry)),
        filter((es) => es.length > 0),
        map(toBatch),
      );
      const acked = (b: Batch) => o.ack(b.ids).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: b.ids, reason: 'done' })));
      if (o.webhooks.length === 0) return merge(undecodable$, merge(replayed$, fresh$).pipe(mergeMap(acked)));
      const all$ = merge(
        replayed$,
        // A new batch's boundaries are recorded as it goes out: the write is issued before the first
        // attempt, but not waited for — a slow data store (e.g. busy with dead-letter writes of a
        // failing webhook) must not delay delivery to the others. Its HDEL, sent later on the same
        // connection, cannot overtake it.
        fresh$.pipe(mergeMap((b) => merge(o.record(b).pipe(ignoreElements()), of(b)))),
      ).pipe(
        map((b) => {
          o.onBatch?.(b);
          return b;
        }),
      );
      const delivered$ = all$.pipe(
        connect((shared$) => {
          const results$ = merge(...o.webhooks.map((w, i) => shared$.pipe(o.lane(i, w))));
          return results$.pipe(
            connect((r$) =>
              merge(
                r$.pipe(map((result): PipelineEvent => ({ kind: 'lane', result }))),
                r$.pipe(whenAllDone(o.webhooks.length), mergeMap(acked)),
              ),
            ),
          );
        }),
      );
      return merge(undecodable$, delivered$);
    }),
  );
