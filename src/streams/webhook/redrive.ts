import { catchError, concat, defer, EMPTY, finalize, from, ignoreElements, last, map, mergeMap, type Observable, of, type SchedulerLike, type Subject, take, timer } from 'rxjs';
import { backlogBatch, type BacklogItem } from './backlogEntry';
import { JSON_CONTENT_TYPE } from './body';
import type { DisabledMark } from './disabledMarks';
import type { LaneBacklog } from './backlog';
import type { Batch } from '../read/batches';
import type { AttemptResult } from './answers';
import * as L from './laneState';
import type { AttemptEvent, AttemptsEnd, Sending } from './sending';
import type { DeliverySettings } from './subscription';

/**
 * What the redrive shares with its lane: its settings and scheduler, its state (read with
 * `state()`, changed only by `dispatch`), its sending, backlog, observer and 410 mark, and the
 * wake-up the lane sends when the backlog may have work.
 */
export interface RedriveContext {
  readonly o: {
    readonly backlog: LaneBacklog;
    readonly observer: {
      attempt(result: AttemptResult, attempt: number, seconds: number, willRetry: boolean): void;
      redriven(webhookId: string, delivered: boolean, reason?: string, batch?: Batch): void;
    };
  };
  readonly settings: DeliverySettings;
  readonly scheduler: SchedulerLike;
  readonly sending: Sending;
  readonly mark: DisabledMark;
  state(): L.LaneState;
  dispatch(e: L.LaneEvent): L.StepOutput;
  /** 410 Gone (invariant 9): remembered in the store, then nothing more is sent; completes once remembered (or that failed). */
  disable(): Observable<unknown>;
  /** The attempts' events turned into what the lane and its observer must hear; their end. */
  attempted(events$: Observable<AttemptEvent>): Observable<AttemptsEnd>;
  readonly wake$: Subject<void>;
}

/**
 * A lane's backlog at work (CONTRACT 4.4; invariants 5, 6, 9 of `laneState.ts`): while the circuit
 * is open, the oldest redrivable entry is sent as a probe every `probeIntervalMs` until one answers
 * 2xx; while it is closed and redrivable entries wait (AutoRedrive), they are re-sent oldest
 * first, `maxInFlight` at a time, with the usual retries; while the webhook is disabled (410), the
 * lane only watches for it to be enabled again. One replica at a time does any of it (the
 * backlog's lease). Never errors: a failed step is tried again after the probe interval.
 */
export const laneRedrive = (c: RedriveContext): Observable<unknown> => {
  const { o, settings, scheduler, sending, dispatch } = c;

  /** One backlog entry re-sent: with the usual retries (redrive), or one request (probe). */
  const redriveOne$ = (item: BacklogItem, probe: boolean): Observable<boolean | null> =>
    o.backlog.fetch(item).pipe(
      mergeMap((entry) => {
        if (entry === null) return of(null); // gone meanwhile (a replica, an operator, the cap): nothing to send
        const batch = backlogBatch({ id: item.id, webhookId: item.webhookId, body: entry.body, contentType: entry.contentType ?? JSON_CONTENT_TYPE, traces: entry.traces, cause: entry.cause });
        const end$: Observable<AttemptsEnd> = probe
          ? sending.once$(batch).pipe(map(({ r, seconds, sent }): AttemptsEnd => {
              if (sent) o.observer.attempt(r, item.attempts + 1, seconds, false);
              return r.ok ? { ok: true } : { ok: false, retryable: r.retryable, error: r.reason, attempts: 1, ...(r.gone ? { gone: true as const } : {}) };
            }))
          : c.attempted(sending.attempts$(batch));
        return end$.pipe(
          mergeMap((end) => {
            o.observer.redriven(item.webhookId, end.ok, end.ok ? undefined : end.error, batch);
            if (end.ok) {
              dispatch({ kind: 'delivered' });
              return o.backlog.remove(item).pipe(map(() => true));
            }
            if (end.gone) return concat(c.disable().pipe(ignoreElements()), o.backlog.failedAgain(item, end.error, item.attempts + end.attempts)).pipe(last(null, null), map(() => false));
            dispatch({ kind: 'failed' });
            return o.backlog.failedAgain(item, end.error, item.attempts + end.attempts).pipe(last(null, null), map(() => false));
          }),
        );
      }),
      catchError(() => of(false)),
    );

  /** While the circuit is open: every probe interval, the oldest redrivable entry, once. */
  const probe$ = (): Observable<unknown> =>
    timer(settings.probeIntervalMs, scheduler).pipe(
      mergeMap(() => o.backlog.lease()),
      mergeMap((held) => (held ? o.backlog.pending() : of([] as BacklogItem[]))),
      mergeMap((items) => (items.length === 0 ? of(false) : redriveOne$(items[0]!, true))),
      map((delivered) => {
        if (delivered === true && c.state().open) dispatch({ kind: 'probeDelivered' });
      }),
      catchError(() => of(null)),
    );

  /**
   * One pass over the backlog: read it (every replica does, to know whether new batches must
   * queue behind it); send it oldest first, `maxInFlight` at a time, until it is empty or the
   * circuit opens — only with the lease, else wait for the replica that holds it.
   */
  const pass$ = (): Observable<unknown> =>
    defer(() => {
      dispatch({ kind: 'scanStarted' });
      return o.backlog.pending();
    }).pipe(
      mergeMap((items) => {
        dispatch({ kind: 'scanned', count: items.length });
        if (items.length === 0) return of(null);
        return o.backlog.lease().pipe(
          mergeMap((held) => {
            if (!held) return timer(settings.probeIntervalMs, scheduler);
            dispatch({ kind: 'redriveStarted' });
            // checked as each entry's turn comes: the circuit may open meanwhile, and the lease
            // (renewed on every entry) may have passed to another replica
            const next$ = (item: BacklogItem) =>
              defer(() => (c.state().open || c.state().disabled ? EMPTY : o.backlog.lease().pipe(mergeMap((still) => (still ? redriveOne$(item, false) : EMPTY)))));
            return from(items).pipe(
              mergeMap(next$, settings.maxInFlight),
              finalize(() => dispatch({ kind: 'redriveEnded' })),
            );
          }),
        );
      }),
      ignoreElements(),
      catchError(() => timer(settings.probeIntervalMs, scheduler)),
    );

  /** While disabled: every probe interval, whether it still is (an operator's replay enables it). */
  const watch$ = (): Observable<unknown> =>
    timer(settings.probeIntervalMs, scheduler).pipe(
      mergeMap(() => c.mark.isDisabled()),
      map((still) => {
        if (!still && c.state().disabled) dispatch({ kind: 'enabled' });
      }),
      catchError(() => of(null)),
    );

  return defer(function next(): Observable<unknown> {
    const what = L.nextRedrive(c.state(), settings);
    const next$ = what === 'watch' ? watch$() : what === 'probe' ? probe$() : what === 'pass' ? pass$() : c.wake$.pipe(take(1));
    return concat(next$.pipe(ignoreElements()), defer(next));
  });
};
