import {
  concat, defer, EMPTY, expand, map, type Observable, of, repeat, retry, type SchedulerLike, asyncScheduler,
  takeWhile, timer, filter, ignoreElements,
} from 'rxjs';
import type { StreamEntry } from './entries';

/** The data-store side of reading `process:updates` with a consumer group. */
export interface StreamPort {
  /** XGROUP CREATE … MKSTREAM at `$` or `0`; an existing group is kept as it is. */
  createGroup(start: '$' | '0'): Observable<unknown>;
  /** XREADGROUP … STREAMS process:updates {after}: this consumer's own pending entries. */
  readOwnPending(after: string, count: number): Observable<StreamEntry[]>;
  /** XREADGROUP … BLOCK {blockMs} STREAMS process:updates >: new entries, [] on timeout. */
  readNew(count: number, blockMs: number): Observable<StreamEntry[]>;
  /** XAUTOCLAIM … {minIdleMs} {start} COUNT {count}: entries idle at other consumers. */
  claimIdle(start: string, minIdleMs: number, count: number): Observable<{ next: string; entries: StreamEntry[] }>;
}

export interface ReaderOptions {
  readonly startFromLatest: boolean;
  readonly count: number;
  readonly blockMs: number;
  readonly retryMs: number;
  /** Entries idle this long at another consumer are claimed (CONTRACT 4.3: 60 s). */
  readonly claimIdleMs: number;
  readonly claimEveryMs: number;
  /** Checked after every read: once true, the reader completes instead of reading again. */
  readonly isStopping: () => boolean;
  readonly onError: (err: unknown) => void;
  readonly scheduler?: SchedulerLike;
}

const lastId = (es: readonly StreamEntry[]): string => es[es.length - 1]!.id;

/**
 * Entries of `process:updates` for this consumer, in chunks as read: first its own pending
 * entries (a restart loses nothing), then entries idle at other consumers, then new entries, with
 * a claim round every `claimEveryMs`. On an error (connection lost) it waits `retryMs` and
 * resumes from the group's position — without re-reading its pending entries, which are still
 * in the pipeline. The position is carried by the group and the stream, never by a mutable cursor
 * shared across subscriptions.
 */
export const readUpdates$ = (port: StreamPort, o: ReaderOptions): Observable<StreamEntry[]> => {
  const scheduler = o.scheduler ?? asyncScheduler;
  const group$ = defer(() => port.createGroup(o.startFromLatest ? '$' : '0')).pipe(ignoreElements());
  const pending$ = defer(() => port.readOwnPending('0', o.count)).pipe(
    expand((es) => (es.length === 0 ? EMPTY : port.readOwnPending(lastId(es), o.count))),
    takeWhile((es) => es.length > 0),
  );
  const claim$ = defer(() => port.claimIdle('0-0', o.claimIdleMs, o.count)).pipe(
    expand((r) => (r.next === '0-0' ? EMPTY : port.claimIdle(r.next, o.claimIdleMs, o.count))),
    map((r) => r.entries),
    filter((es) => es.length > 0),
  );
  let lastClaim = scheduler.now();
  const loop$ = defer(() => {
    const due = scheduler.now() - lastClaim >= o.claimEveryMs;
    if (due) lastClaim = scheduler.now();
    const read$ = port.readNew(o.count, o.blockMs);
    return due ? concat(claim$, read$) : read$;
  }).pipe(
    filter((es) => es.length > 0),
    repeat({ delay: () => (o.isStopping() ? EMPTY : of(0)) }),
  );
  const retrying = <A>(source$: Observable<A>): Observable<A> =>
    source$.pipe(
      retry({
        delay: (err: unknown) => {
          o.onError(err);
          return o.isStopping() ? EMPTY : timer(o.retryMs, scheduler);
        },
      }),
    );
  return concat(retrying(concat(group$, pending$, claim$)), retrying(concat(group$, loop$)));
};
