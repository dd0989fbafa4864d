import {
  connect, filter, map, merge, mergeMap, Observable, type OperatorFunction, type SchedulerLike,
} from 'rxjs';
import type { Webhook } from '../config/managed';
import { batches, type Batch } from './batches';
import { decodeEntry, type DecodedEntry, type StreamEntry } from './entries';
import type { LaneResult } from './deliver';

export interface PipelineOptions {
  readonly webhooks: readonly Webhook[];
  readonly windowMs: number;
  readonly maxSize: number;
  /** Builds the lane of webhook `index` (see `webhookLane`). */
  readonly lane: (index: number, webhook: Webhook) => OperatorFunction<Batch, LaneResult>;
  /** XACK; expected to retry by itself until it succeeds or is unsubscribed. */
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

/**
 * Stream entries → decoded points → batches → one lane per webhook, in parallel → XACK once a
 * batch is done at every webhook (with no webhook, at once). Entries that do not decode are
 * acknowledged at once (CONTRACT 4.2/4.3). Completes after the source completes and every
 * batch in flight is finished: that is the graceful stop.
 */
export const pushPipeline$ = (o: PipelineOptions) => (entries$: Observable<StreamEntry>): Observable<PipelineEvent> =>
  entries$.pipe(
    map(decodeEntry),
    connect((decoded$) => {
      const undecodable$ = decoded$.pipe(
        filter((d): d is Extract<typeof d, { ok: false }> => !d.ok),
        mergeMap((d) => {
          o.onUndecodable(d.id, d.reason);
          return o.ack([d.id]).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: [d.id], reason: 'undecodable' })));
        }),
      );
      const batches$ = decoded$.pipe(
        filter((d): d is Extract<typeof d, { ok: true }> => d.ok),
        map((d): DecodedEntry => d.entry),
        batches(o.windowMs, o.maxSize, o.scheduler),
        map((b) => {
          o.onBatch?.(b);
          return b;
        }),
      );
      const acked = (b: Batch) => o.ack(b.ids).pipe(map((): PipelineEvent => ({ kind: 'acked', ids: b.ids, reason: 'done' })));
      const delivered$ =
        o.webhooks.length === 0
          ? batches$.pipe(mergeMap(acked))
          : batches$.pipe(
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
