import { Observable, type OperatorFunction } from 'rxjs';
import type { StreamEntry } from './entries';
import { compareIds } from './lossMonitor';
import type { ReadChunk } from './reader';

/** An entry to batch as usual, or entries re-delivered as the batch they were before. */
export type Unit =
  | { readonly kind: 'entry'; readonly entry: StreamEntry }
  | { readonly kind: 'batch'; readonly entries: readonly StreamEntry[] };

/**
 * Re-forms replayed entries into the batches they belonged to (`known`: first ID → last ID, as
 * recorded when each batch was formed), so that a batch delivered again after a restart carries
 * the same `webhook-id` (CONTRACT 4.2). A recorded batch may span pages of the replay; it is closed
 * at its last ID, at the first entry past it, or at the first live chunk.
 */
export const regroup = (known: ReadonlyMap<string, string>): OperatorFunction<ReadChunk, Unit> => (chunks$) =>
  new Observable<Unit>((subscriber) => {
    let open: { last: string; entries: StreamEntry[] } | null = null;
    const close = () => {
      if (open !== null) {
        subscriber.next({ kind: 'batch', entries: open.entries });
        open = null;
      }
    };
    return chunks$.subscribe({
      next: (chunk) => {
        for (const e of chunk.entries) {
          if (open !== null && chunk.replay && compareIds(e.id, open.last) <= 0) {
            open.entries.push(e);
            if (e.id === open.last) close();
            continue;
          }
          close();
          const last = chunk.replay ? known.get(e.id) : undefined;
          if (last !== undefined) {
            open = { last, entries: [e] };
            if (last === e.id) close();
          } else subscriber.next({ kind: 'entry', entry: e });
        }
        if (!chunk.replay) close();
      },
      error: (err) => subscriber.error(err),
      complete: () => {
        close();
        subscriber.complete();
      },
    });
  });
