import {
  concat, concatMap, defer, EMPTY, expand, filter, finalize, ignoreElements, map, mergeMap, type Observable, of, repeat, retry,
  type SchedulerLike, asyncScheduler, takeWhile, tap, timer,
} from 'rxjs';
import type { BatchRecords, Settled } from './deliveryState';
import type { StreamEntry } from './entries';

/** A consumer of the group as `XINFO CONSUMERS` shows it. */
export interface ConsumerInfo {
  readonly name: string;
  readonly pending: number;
  /** Milliseconds since it last read (or claimed). */
  readonly idleMs: number;
}

/** The data-store side of reading `process:updates` with a consumer group. */
export interface StreamPort {
  /** This consumer's name in the group. */
  readonly consumer: string;
  /** XGROUP CREATE … MKSTREAM at `$` or `0`; an existing group is kept as it is. */
  createGroup(start: '$' | '0'): Observable<unknown>;
  /** XREADGROUP … STREAMS process:updates {after}: this consumer's own pending entries. */
  readOwnPending(after: string, count: number): Observable<StreamEntry[]>;
  /** XREADGROUP … BLOCK {blockMs} STREAMS process:updates >: new entries, [] on timeout. */
  readNew(count: number, blockMs: number): Observable<StreamEntry[]>;
  /** XINFO CONSUMERS of the group. */
  consumers(): Observable<ConsumerInfo[]>;
  /** XPENDING of `consumer` (oldest `count`), then XCLAIM of those idle for `minIdleMs` to this consumer. */
  claimFrom(consumer: string, minIdleMs: number, count: number): Observable<StreamEntry[]>;
  /**
   * Takes the replicas' claim lease for `ms` (SET NX PX); false when another replica holds it. It
   * is not released: it expires before this replica's next round.
   */
  takeClaimLease(ms: number): Observable<boolean>;
  /** Which entries are known to be acknowledged (see `Settled`). */
  settled(): Observable<Settled>;
  /** The delivery records (batches formed and not acknowledged), read back from the data store. */
  loadRecords(): Observable<BatchRecords>;
  /** Forgets the records of settled batches; resolves to how many. */
  forgetSettled(settled: Settled): Observable<number>;
}

export interface ReaderOptions {
  readonly startFromLatest: boolean;
  readonly count: number;
  readonly blockMs: number;
  readonly retryMs: number;
  /** A consumer that has not read for this long is taken for dead, and its entries claimed (CONTRACT 4.3: 60 s). */
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
  /** Called for every claim: how many entries, taken from which consumer (CONTRACT 4.3: every claim is logged). */
  readonly onClaim: (from: string, count: number, idleMs: number) => void;
  readonly scheduler?: SchedulerLike;
}

const lastId = (es: readonly StreamEntry[]): string => es[es.length - 1]!.id;

/**
 * Entries as read. `replay` marks own pending and claimed entries: they may have been batched
 * and sent before, and are re-formed along the delivery records read back just before them
 * (`records`; see `regroup`). A live chunk may be empty (a BLOCK that timed out): it tells that
 * the replay is over.
 */
export interface ReadChunk {
  readonly entries: readonly StreamEntry[];
  readonly replay: boolean;
  readonly records?: BatchRecords;
}

/**
 * Entries of `process:updates` for this consumer, in chunks as read: first its own pending
 * entries (a restart loses nothing), then a claim round, then new entries, with a claim round
 * every `claimEveryMs`. On an error (connection lost) it waits `retryMs` and starts over from the
 * group's position: own pending entries not in flight here, then new ones. The position is
 * carried by the group and the stream, never by a mutable cursor.
 *
 * A claim round (CONTRACT 4.3) runs under a lease that one replica holds at a time, and takes the
 * whole pending list of every other consumer that has not read for `claimIdleMs` — never an
 * entry of this consumer, whose in-flight entries are never idle-claimed. A live consumer reads
 * every `blockMs`, so it is never taken for dead.
 */
export const readUpdates$ = (port: StreamPort, o: ReaderOptions): Observable<ReadChunk> => {
  const scheduler = o.scheduler ?? asyncScheduler;
  const group$ = defer(() => port.createGroup(o.startFromLatest ? '$' : '0')).pipe(ignoreElements());
  const pending$ = defer(() => port.loadRecords()).pipe(
    mergeMap((records) =>
      port.readOwnPending('0', o.count).pipe(
        expand((es) => (es.length === 0 ? EMPTY : port.readOwnPending(lastId(es), o.count))),
        takeWhile((es) => es.length > 0),
        map((es): ReadChunk => ({ entries: es.filter((e) => !o.isInFlight(e.id)), replay: true, records })),
        filter((c) => c.entries.length > 0),
      ),
    ),
  );
  const claimFrom$ = (c: ConsumerInfo, records: BatchRecords): Observable<ReadChunk> => {
    let claimed = 0;
    return port.claimFrom(c.name, o.claimIdleMs, o.count).pipe(
      expand((es) => (es.length === 0 ? EMPTY : port.claimFrom(c.name, o.claimIdleMs, o.count))),
      takeWhile((es) => es.length > 0),
      tap((es) => (claimed += es.length)),
      map((es): ReadChunk => ({ entries: es, replay: true, records })),
      finalize(() => {
        if (claimed > 0) o.onClaim(c.name, claimed, c.idleMs);
      }),
    );
  };
  const claim$ = defer(() => port.takeClaimLease(Math.max(Math.floor(o.claimEveryMs / 2), 1))).pipe(
    mergeMap((held) =>
      !held
        ? EMPTY
        : concat(
            defer(() => port.settled()).pipe(mergeMap((s) => port.forgetSettled(s)), ignoreElements()),
            defer(() => port.consumers()).pipe(
              map((cs) => cs.filter((c) => c.name !== port.consumer && c.pending > 0 && c.idleMs > o.claimIdleMs)),
              filter((cs) => cs.length > 0),
              // read back after the dead consumers stopped writing: their records are complete
              mergeMap((cs) => port.loadRecords().pipe(mergeMap((records) => of(...cs).pipe(concatMap((c) => claimFrom$(c, records)))))),
            ),
          ),
    ),
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
