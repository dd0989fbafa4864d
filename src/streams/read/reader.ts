import {
  concat, concatMap, defer, EMPTY, endWith, expand, filter, finalize, ignoreElements, last, map, mergeMap, type Observable, of, repeat, retry,
  type SchedulerLike, asyncScheduler, take, takeWhile, tap, timer,
} from 'rxjs';
import type { BatchRecords, Settled } from './deliveryState';
import type { StreamEntry } from './entries';
import type { PendingLook } from './inFlight';
import { compareIds } from '../store/streamIds';

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
  /** XREADGROUP … {consumer} … STREAMS process:updates {after}: the pending entries of `consumer` (this one or one of its claim consumers). */
  readPending(consumer: string, after: string, count: number): Observable<StreamEntry[]>;
  /** XREADGROUP … BLOCK {blockMs} STREAMS process:updates >: new entries, [] on timeout. */
  readNew(count: number, blockMs: number): Observable<StreamEntry[]>;
  /** XINFO CONSUMERS of the group. */
  consumers(): Observable<ConsumerInfo[]>;
  /**
   * XPENDING of `consumer` (oldest `count`, and on to the end of a recorded batch the page would
   * cut: CONTRACT 4.3, whole recorded batches at a time), then one XCLAIM of those idle for
   * `minIdleMs` to consumer `to`.
   */
  claimFrom(consumer: string, to: string, minIdleMs: number, count: number, records: BatchRecords): Observable<StreamEntry[]>;
  /**
   * Refreshes `consumer`'s idle time without reading anything (a blocking read that times out does
   * not, on Redis 7.0): a consumer of this process that holds entries is never taken for dead.
   */
  touch(consumer: string): Observable<unknown>;
  /** XGROUP DELCONSUMER: only for a claim consumer of this process whose entries are all acknowledged. */
  deleteConsumer(consumer: string): Observable<unknown>;
  /**
   * Takes the replicas' claim lease for `ms` (SET NX PX); false while another process holds it.
   * Held for a claim round, and by a process that starts over for the moment it takes to show it is
   * alive (see `readUpdates$`).
   */
  takeClaimLease(ms: number): Observable<boolean>;
  /** Extends the lease by `ms` if this process still holds it; false when it does not. */
  renewClaimLease(ms: number): Observable<boolean>;
  /** Gives the lease up, if this process holds it. */
  releaseClaimLease(): Observable<unknown>;
  /** Which entries are known to be acknowledged (see `Settled`). */
  settled(): Observable<Settled>;
  /** The delivery records (batches formed and not acknowledged), read back from the data store. */
  loadRecords(): Observable<BatchRecords>;
  /** Forgets the records of settled batches; resolves to how many. */
  forgetSettled(settled: Settled): Observable<number>;
}

/**
 * The consumer that holds what `self` claimed from `from`: claimed entries never join the
 * pending list of `self` (or of another claim), so that each consumer's pending entries are what
 * one consumer read, in its order, and its recorded batches can be re-formed by their first and
 * last IDs without taking in another consumer's entries that fall between them.
 */
export const claimConsumer = (self: string, from: string): string => `${self}~${from}`;
export const isClaimConsumerOf = (self: string, name: string): boolean => name.startsWith(`${self}~`);

export interface ReaderOptions {
  readonly startFromLatest: boolean;
  readonly count: number;
  readonly blockMs: number;
  readonly retryMs: number;
  /** A consumer that has not read for this long is taken for dead, and its entries claimed (CONTRACT 4.3: 60 s). */
  readonly claimIdleMs: number;
  readonly claimEveryMs: number;
  /**
   * Begins a look at a pending list (see `InFlight`): after a reconnection the own pending entries
   * are re-read (a read whose reply was lost stays pending at this consumer), and those this
   * process has in flight, or acknowledged since the look began, are skipped rather than delivered
   * twice.
   */
  readonly lookAtPending: () => PendingLook;
  /** Checked after every read: once true, the reader completes instead of reading again. */
  readonly isStopping: () => boolean;
  readonly onError: (err: unknown) => void;
  /** Called for every claim: how many entries, taken from which consumer into which (CONTRACT 4.3: every claim is logged). */
  readonly onClaim: (from: string, into: string, count: number, idleMs: number) => void;
  readonly scheduler?: SchedulerLike;
}

const lastId = (es: readonly StreamEntry[]): string => es[es.length - 1]!.id;

/**
 * How many of these entries (a consumer's pending entries, in order) end at a recorded batch's
 * end: all of them, unless the last recorded batch among them has not reached its last entry —
 * then up to where that batch begins.
 */
export const wholeBatches = (es: readonly StreamEntry[], records: BatchRecords): number => {
  let open: { start: number; last: string } | undefined;
  for (let i = 0; i < es.length; i++) {
    const id = es[i]!.id;
    if (open !== undefined && compareIds(id, open.last) >= 0) open = undefined;
    const r = records.get(id);
    if (r !== undefined && compareIds(r.last, id) > 0) open = { start: i, last: r.last };
  }
  return open === undefined ? es.length : open.start;
};

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
  /** The consumer whose pending entries a replay chunk holds: a batch never spans two. */
  readonly source?: string;
}

/**
 * Entries of `process:updates` for this consumer, in chunks as read: first its own pending
 * entries and those of its claim consumers (a restart loses nothing), then a claim round, then
 * new entries, with a claim round every `claimEveryMs`. On an error (connection lost) it waits
 * `retryMs` and starts over from the group's position: pending entries not in flight here, then
 * new ones. The position is carried by the group and the stream, never by a mutable cursor.
 *
 * A claim round (CONTRACT 4.3) first keeps this process's consumers alive (`touch`: a consumer
 * holding entries in flight is never taken for dead, even on a quiet stream) and deletes its
 * claim consumers left empty; then, under a lease that one process holds at a time, it reads the
 * consumers again and takes the whole pending list of every other consumer that has not read for
 * `claimIdleMs` into a claim consumer of its own (`claimConsumer`), whole recorded batches at a
 * time — never an entry of this process.
 *
 * The same lease keeps a claim and an owner's own replay apart: a process that starts over (a
 * restart under the same consumer name, as a pod's container is restarted) takes the lease and
 * touches its consumers before it re-reads them. So a claim round either took the whole pending
 * list before (nothing is left to re-read) or finds the consumer alive and takes nothing. Without
 * it, a claim that began before the restart went on while the owner re-read, and each re-formed a
 * part of one batch (a chaos run saw a batch's tail sent again under another webhook-id).
 */
export const readUpdates$ = (port: StreamPort, o: ReaderOptions): Observable<ReadChunk> => {
  const scheduler = o.scheduler ?? asyncScheduler;
  const self = port.consumer;
  const mine = (name: string) => name === self || isClaimConsumerOf(self, name);
  const group$ = defer(() => port.createGroup(o.startFromLatest ? '$' : '0')).pipe(ignoreElements());
  /**
   * A consumer's pending entries, page by page, each page cut at a recorded batch's end: the
   * entries of a batch that a page cuts go on with the next page, so a batch is handed on whole.
   * (Handed on in part, and the replay then broken off by an error and started over, the part was
   * closed as the whole batch when the replay passed to another consumer, and the rest went out
   * later as a batch of its own under another webhook-id: a chaos run saw it.)
   */
  const pendingOf$ = (consumer: string, records: BatchRecords): Observable<ReadChunk> =>
    defer(() => {
      // begun before the first read: each page is filtered as it arrives, against what was in
      // flight or acknowledged since (a page, or a batch carried on, can wait for later pages)
      const look = o.lookAtPending();
      let carry: StreamEntry[] = [];
      const pages$ = port.readPending(consumer, '0', o.count).pipe(
        expand((es) => (es.length === 0 ? EMPTY : port.readPending(consumer, lastId(es), o.count))),
        takeWhile((es) => es.length > 0),
        map((es) => {
          const all = [...carry, ...es.filter((e) => !look.has(e.id))];
          const cut = wholeBatches(all, records);
          carry = all.slice(cut);
          return all.slice(0, cut);
        }),
      );
      return concat(pages$, defer(() => of(carry))).pipe(
        map((es): ReadChunk => ({ entries: es, replay: true, records, source: consumer })),
        filter((c) => c.entries.length > 0),
        finalize(() => look.end()),
      );
    });
  const leaseMs = Math.max(Math.floor(o.claimEveryMs / 2), 1);
  /**
   * `work$`'s last value, with the lease held while it runs and given up before the value goes on
   * (waited for: a claim round holds it for a moment; a crashed holder's lease expires).
   */
  const underLease = <A>(work$: Observable<A>): Observable<A> =>
    defer(() => port.takeClaimLease(leaseMs)).pipe(
      mergeMap((held) => (held ? of(true) : timer(o.retryMs, scheduler).pipe(mergeMap(() => EMPTY)))),
      repeat({ delay: () => of(0) }),
      take(1),
      mergeMap(() => work$.pipe(last())),
      mergeMap((value) => defer(() => port.releaseClaimLease()).pipe(map(() => value))),
    );
  const pending$ = underLease(
    defer(() => port.consumers()).pipe(
      mergeMap((cs) => {
        const claims = cs.filter((c) => isClaimConsumerOf(self, c.name) && c.pending > 0).map((c) => c.name);
        return of(self, ...claims).pipe(concatMap((name) => port.touch(name)), ignoreElements(), endWith(claims));
      }),
    ),
  ).pipe(
    mergeMap((claims) => port.loadRecords().pipe(mergeMap((records) => of(self, ...claims).pipe(concatMap((name) => pendingOf$(name, records)))))),
  );
  const claimFrom$ = (c: ConsumerInfo, records: BatchRecords): Observable<ReadChunk> => {
    const into = claimConsumer(self, c.name);
    let claimed = 0;
    // each page under the lease, renewed: a round that outlives it stops rather than race an owner
    const page$ = () => port.renewClaimLease(leaseMs).pipe(mergeMap((held) => (held ? port.claimFrom(c.name, into, o.claimIdleMs, o.count, records) : of([]))));
    return page$().pipe(
      expand((es) => (es.length === 0 ? EMPTY : page$())),
      takeWhile((es) => es.length > 0),
      tap((es) => (claimed += es.length)),
      map((es): ReadChunk => ({ entries: es, replay: true, records, source: into })),
      finalize(() => {
        if (claimed > 0) o.onClaim(c.name, into, claimed, c.idleMs);
      }),
    );
  };
  const claim$ = defer(() => port.consumers()).pipe(
    mergeMap((cs) =>
      concat(
        of(...cs.filter((c) => mine(c.name) && (c.name === self || c.pending > 0))).pipe(concatMap((c) => port.touch(c.name)), ignoreElements()),
        of(...cs.filter((c) => isClaimConsumerOf(self, c.name) && c.pending === 0)).pipe(concatMap((c) => port.deleteConsumer(c.name)), ignoreElements()),
        defer(() => port.takeClaimLease(leaseMs)).pipe(
          mergeMap((held) =>
            !held
              ? EMPTY
              : concat(
                  defer(() => port.settled()).pipe(mergeMap((s) => port.forgetSettled(s)), ignoreElements()),
                  // who is dead, read again under the lease: an owner that came back meanwhile is alive
                  defer(() => port.consumers()).pipe(
                    mergeMap((now) => {
                      const dead = now.filter((c) => !mine(c.name) && c.pending > 0 && c.idleMs > o.claimIdleMs);
                      // read back after the dead consumers stopped writing: their records are complete
                      return dead.length === 0 ? EMPTY : port.loadRecords().pipe(mergeMap((records) => of(...dead).pipe(concatMap((c) => claimFrom$(c, records)))));
                    }),
                  ),
                  defer(() => port.releaseClaimLease()).pipe(ignoreElements()),
                ),
          ),
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
