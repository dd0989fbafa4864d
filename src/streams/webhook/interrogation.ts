import { defaultIfEmpty, Observable, Subscription, take } from 'rxjs';
import type { PostBatch } from './answers';
import type { Batch } from '../read/batches';

/**
 * CONTRACT 4.6: an interrogation as a subscription's lane sees it. The lane knows nothing of
 * Redis: it is given interrogations, begins a run of each in its order (invariant 10 in
 * `lane.ts`), pulls the run's requests one at a time, and tells the run when every request
 * has been answered 2xx or put in the backlog.
 */
export type InterrogationCause = 'interrogation' | 'periodic';

export interface Interrogation {
  readonly cause: InterrogationCause;
  /** Begins a run: the newest stream ID is read as its `P`; a run cut short is never resumed, a new one is begun. */
  begin(): InterrogationRun;
}

export interface InterrogationRun {
  /** The next request, or null when there is none left (an initial one already done elsewhere has none at all). */
  next(): Observable<Batch | null>;
  /** Every request ended (2xx or backlog): remembered where it must be; completes once done. */
  completed(): Observable<unknown>;
  /** Cut short (a stop) or failed: lets go of what it holds. */
  cancel(): void;
  /** After its end: true when there was nothing to do (an initial one already done, by this URL's earlier run or a replica). */
  skipped?(): boolean;
  /** How its requests are sent, when not by the lane's own `post` (a run that reads and sends on a thread of its own). */
  readonly sender?: RunSender;
}

/**
 * A run's own sender: its requests' bodies stay where they were made (a thread), so the batches the
 * lane handles carry none; `withBody` gives one its body, for the backlog (once: the sender lets
 * it go then, as it does when a request is answered 2xx).
 */
export interface RunSender {
  readonly post: PostBatch;
  withBody(batch: Batch): Observable<Batch>;
}

/** What the lane tells its observer of interrogations (the status, the metric, the log). */
export type InterrogationEvent =
  | { readonly kind: 'started'; readonly cause: InterrogationCause }
  | { readonly kind: 'sent'; readonly points: number }
  | { readonly kind: 'completed'; readonly cause: InterrogationCause; readonly requests: number }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'failed'; readonly cause: InterrogationCause; readonly error: string };

/** `gi-{P}-{k}`, or `pi-{P}-{k}` for a periodic one: `P` fixes the image, `k` counts from 1. */
export const interrogationId = (cause: InterrogationCause, p: string, k: number): string => `${cause === 'periodic' ? 'pi' : 'gi'}-${p}-${k}`;

const NONE: ReadonlySet<string> = new Set();

/** Request `k` of a run, of `size` points, as the lane holds it: its body stays on the run's thread, which sends it. */
export const interrogationRequest = (cause: InterrogationCause, p: string, k: number, size: number, made: { renderError?: string; skipped?: number } = {}): Batch => {
  const webhookId = interrogationId(cause, p, k);
  const content = {
    kind: 'elsewhere' as const, ...(made.renderError !== undefined ? { renderError: made.renderError } : {}), ...(made.skipped !== undefined && made.skipped > 0 ? { skipped: made.skipped } : {}),
  };
  return { webhookId, first: webhookId, ids: [], content, cause, size, recorded: true, done: NONE };
};

/** Request `k` of a run, of these points (each a stored JSON object's UTF-8 bytes), as the run's thread makes it. */
export const interrogationBatch = (cause: InterrogationCause, p: string, k: number, points: readonly Uint8Array[]): Batch => {
  const webhookId = interrogationId(cause, p, k);
  return { webhookId, first: webhookId, ids: [], content: { kind: 'bytes', points }, cause, size: points.length, recorded: true, done: NONE };
};

/**
 * Pulls items with `next` one at a time and runs `work` on each, at most `concurrency` at once:
 * an item is pulled only when a slot is free, so memory holds `concurrency` items however many
 * there are; each `work` is subscribed in pull order. Completes when `next` gave null and every
 * `work` completed; the first error ends it.
 */
export const pullEach = <A>(next: () => Observable<A | null>, concurrency: number, work: (a: A) => Observable<unknown>): Observable<never> =>
  new Observable<never>((subscriber) => {
    const subs = new Subscription();
    let active = 0;
    let pulling = false;
    let exhausted = false;
    const pump = (): void => {
      if (subscriber.closed) return;
      if (exhausted) {
        if (active === 0 && !pulling) subscriber.complete();
        return;
      }
      if (pulling || active >= concurrency) return;
      pulling = true;
      subs.add(next().pipe(take(1), defaultIfEmpty(null)).subscribe({
        next: (a) => {
          pulling = false;
          if (a === null) exhausted = true;
          else {
            active++;
            subs.add(work(a).subscribe({
              error: (err: unknown) => subscriber.error(err),
              complete: () => {
                active--;
                pump();
              },
            }));
          }
          pump();
        },
        error: (err: unknown) => subscriber.error(err),
      }));
    };
    pump();
    return subs;
  });
