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
  /**
   * True for an entry this process read and has not acknowledged yet: after a reconnection the
   * own pending entries are re-read (a read whose reply was lost stays pending at this consumer),
   * and those still in the pipeline are skipped rather than delivered twice.
   */
  readonly isInFlight: (id: string) => boolean;
  /** Checked after every read: once true, the reader completes instead of reading again. */
  readonly isStopping: () => boolean;
  readonly onError: (err: unknown) => void;
  readonly scheduler?: SchedulerLike;
}

const lastId = (es: readonly StreamEntry[]): string => es[es.length - 1]!.id;

/**
 * Entries as read. `replay` marks own pending and claimed entries: they may have been batched
 * before, and are re-batched along their recorded boundaries (see `regroup`). A live chunk may be
 * empty (a BLOCK that timed out): it tells that the replay is over.
 */
export interface ReadChunk {
  readonly entries: readonly StreamEntry[];
  readonly replay: boolean;
}

/**
 * Entries of `process:updates` for this consumer, in chunks as read: first its own pending
 * entries (a restart loses nothing), then entries idle at other consumers, then new entries, with
 * a claim round every `claimEveryMs`. On an error (connection lost) it waits `retryMs` and
 * starts over from the group's position: own pending entries not in flight here, then new ones.
 * The position is carried by the group and the stream, never by a mutable cursor.
 */
export const readUpdates$ = (port: StreamPort, o: ReaderOptions): Observable<ReadChunk> => {
  const scheduler = o.scheduler ?? asyncScheduler;
  const group$ = defer(() => port.createGroup(o.startFromLatest ? '$' : '0')).pipe(ignoreElements());
  const pending$ = defer(() => port.readOwnPending('0', o.count)).pipe(
    expand((es) => (es.length === 0 ? EMPTY : port.readOwnPending(lastId(es), o.count))),
    takeWhile((es) => es.length > 0),
    map((es): ReadChunk => ({ entries: es.filter((e) => !o.isInFlight(e.id)), replay: true })),
    filter((c) => c.entries.length > 0),
  );
  const claim$ = defer(() => port.claimIdle('0-0', o.claimIdleMs, o.count)).pipe(
    expand((r) => (r.next === '0-0' ? EMPTY : port.claimIdle(r.next, o.claimIdleMs, o.count))),
    map((r): ReadChunk => ({ entries: r.entries, replay: true })),
    filter((c) => c.entries.length > 0),
  );
  let lastClaim = scheduler.now();
  const loop$ = defer(() => {
    const due = scheduler.now() - lastClaim >= o.claimEveryMs;
    if (due) lastClaim = scheduler.now();
    const read$ = port.readNew(o.count, o.blockMs).pipe(map((entries): ReadChunk => ({ entries, replay: false })));
    return due ? concat(claim$, read$) : read$;
  }).pipe(
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
  return retrying(concat(group$, pending$, claim$, loop$));
};
