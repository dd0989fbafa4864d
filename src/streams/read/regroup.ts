import { Observable, type OperatorFunction } from 'rxjs';
import type { BatchRecord } from './deliveryState';
import type { StreamEntry } from './entries';
import { compareIds } from '../store/streamIds';
import type { ReadChunk } from './reader';

/**
 * Live entries (a chunk as read, never empty), to batch as usual; or re-delivered entries (own pending, claimed) as a batch of
 * their own: with its `record` when they were batched before (same entries, same webhook-id, and
 * the webhooks that already have it), without one when they never went out.
 */
export type Unit =
  | { readonly kind: 'live'; readonly entries: readonly StreamEntry[] }
  | { readonly kind: 'batch'; readonly entries: readonly StreamEntry[]; readonly record?: BatchRecord };

/**
 * Re-forms replayed entries into the batches they were (CONTRACT 4.3), along the records read back
 * with them: a recorded batch may span pages of the replay; it is closed at its last ID, at the
 * first entry past it, at the first live chunk, or where the replay passes to another consumer's
 * pending entries (each consumer's are what one consumer read, in its order: see `claimConsumer`). Replayed entries outside any record were never
 * sent (a batch is recorded before it goes out): they are batched among themselves, at most
 * `maxSize` a batch and never beyond a page, and never mixed with live entries.
 */
export const regroup = (maxSize: number): OperatorFunction<ReadChunk, Unit> => (chunks$) =>
  new Observable<Unit>((subscriber) => {
    let open: { record: BatchRecord; entries: StreamEntry[] } | null = null;
    let loose: StreamEntry[] = [];
    let source: string | undefined;
    const close = () => {
      if (open !== null) {
        subscriber.next({ kind: 'batch', entries: open.entries, record: open.record });
        open = null;
      }
    };
    const flushLoose = () => {
      if (loose.length > 0) {
        subscriber.next({ kind: 'batch', entries: loose });
        loose = [];
      }
    };
    return chunks$.subscribe({
      next: (chunk) => {
        if (!chunk.replay) {
          close();
          flushLoose();
          // a chunk at a time: nothing is carried per entry (CONTRACT 4.7 "Cost")
          if (chunk.entries.length > 0) subscriber.next({ kind: 'live', entries: chunk.entries });
          return;
        }
        if (chunk.source !== source) {
          // another consumer's pending entries: its batches are its own
          close();
          flushLoose();
          source = chunk.source;
        }
        for (const e of chunk.entries) {
          if (open !== null && compareIds(e.id, open.record.last) <= 0) {
            open.entries.push(e);
            if (e.id === open.record.last) close();
            continue;
          }
          close();
          const record = chunk.records?.get(e.id);
          if (record !== undefined) {
            flushLoose();
            open = { record, entries: [e] };
            if (record.last === e.id) close();
          } else {
            loose.push(e);
            if (loose.length >= maxSize) flushLoose();
          }
        }
        flushLoose();
      },
      error: (err) => subscriber.error(err),
      complete: () => {
        close();
        flushLoose();
        subscriber.complete();
      },
    });
  });
