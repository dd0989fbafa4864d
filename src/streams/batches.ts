import { bufferTime, filter, map, type OperatorFunction, type SchedulerLike, asyncScheduler } from 'rxjs';
import type { DecodedEntry } from './entries';

export interface Batch {
  /** `{first}_{last}` stream IDs: the same on every retry, for every webhook, and after a restart. */
  readonly webhookId: string;
  readonly ids: readonly string[];
  /** The request body, serialised once for every webhook. */
  readonly body: string;
  readonly size: number;
}

export const toBatch = (entries: readonly DecodedEntry[]): Batch => ({
  webhookId: `${entries[0]!.id}_${entries[entries.length - 1]!.id}`,
  ids: entries.map((e) => e.id),
  body: `{"datapoints":[${entries.map((e) => e.json).join(',')}]}`,
  size: entries.length,
});

/**
 * A batch closes `windowMs` after it opened or when it holds `maxSize` entries; `bufferTime`
 * emits `[]` for an empty window, which is dropped. On completion the open batch is flushed.
 */
export const batches = (windowMs: number, maxSize: number, scheduler: SchedulerLike = asyncScheduler): OperatorFunction<DecodedEntry, Batch> =>
  (source) =>
    source.pipe(
      bufferTime(windowMs, null, maxSize, scheduler),
      filter((b) => b.length > 0),
      map(toBatch),
    );
