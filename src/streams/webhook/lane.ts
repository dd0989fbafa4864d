import {
  AsyncSubject, asyncScheduler, catchError, concat, defer, EMPTY, finalize, from, ignoreElements, last, map, merge, mergeMap, type Observable, of, retry,
  type SchedulerLike, Subject, take, takeUntil, tap, timer,
} from 'rxjs';
import type { Batch } from '../read/batches';
import { backlogBatch, type BacklogItem, type BacklogReason, type LaneBacklog } from './backlog';
import * as L from './laneState';
import type { WebhookState } from './laneState';
import { makeLimiter } from './limiter';
import { rateGate } from './rateGate';
import type { Subscription } from './subscription';
import { pullEach, type Interrogation, type InterrogationEvent, type RunSender } from '../interrogation/interrogation';
import { classifyError, classifyResponse, type AttemptResult, type PostBatch, type WebhookResponse } from './answers';

/**
 * `skipped`: nothing to send — a re-formed batch this webhook has already (CONTRACT 4.3), or a
 * batch none of whose points its filter matches (4.5; it counts as delivered to it).
 */
export type LaneOutcome = 'delivered' | 'deadlettered' | 'skipped';

export interface LaneResult {
  readonly webhook: number;
  readonly batch: Batch;
  readonly outcome: LaneOutcome;
}

export type { WebhookState } from './laneState';

/** Hooks for logs, metrics and the delivery status, called at the edge; the lane itself never logs. */
export interface LaneObserver {
  attempt(result: AttemptResult, attempt: number, seconds: number, willRetry: boolean): void;
  finished(batch: Batch, outcome: LaneOutcome, attempts: number, reason?: string, backlogReason?: BacklogReason): void;
  queueDepth(depth: number): void;
  /** Every change of state, in-flight requests or consecutive failures. */
  status(s: LaneStatus): void;
  /** A backlog entry redriven (or probed): delivered, or failed again; `batch` as it was sent. */
  redriven(webhookId: string, delivered: boolean, reason?: string, batch?: Batch): void;
  /** An interrogation began, sent points, completed or failed (CONTRACT 4.6). */
  interrogation?(e: InterrogationEvent): void;
}

export interface LaneStatus {
  readonly state: WebhookState;
  readonly consecutiveFailures: number;
  readonly inFlight: number;
  readonly queued: number;
}

/** An attempt not made because the webhook was disabled meanwhile: it ends as a 410 would. */
const NOT_SENT: WebhookResponse = { status: -410 };
const DISABLED: AttemptResult = { ok: false, retryable: false, reason: 'webhook disabled: it answered 410 Gone', gone: true };

/** Where a webhook's 410 Gone is remembered across restarts and replicas (CONTRACT 4.5). */
export interface DisabledMark {
  /** Remembers that the webhook is disabled; completes once written. */
  disable(): Observable<unknown>;
  /** Whether it still is (an operator's successful replay enables it). */
  isDisabled(): Observable<boolean>;
}

/** For a lane without a store (tests): disabled until the process ends. */
export const memoryDisabledMark = (): DisabledMark & { enable(): void } => {
  let disabled = false;
  return { disable: () => of((disabled = true)), isDisabled: () => of(disabled), enable: () => void (disabled = false) };
};

export interface LaneOptions {
  readonly subscription: Subscription;
  /** The webhook's 410 mark; `initiallyDisabled` is what it said at start. */
  readonly disabled?: DisabledMark;
  readonly initiallyDisabled?: boolean;
  /** The subscription's own client (`webhookClient`); marble tests pass cold observables. */
  readonly post: PostBatch;
  readonly backoff: (attempt: number) => number;
  readonly backlog: LaneBacklog;
  readonly observer: LaneObserver;
  readonly scheduler?: SchedulerLike;
  /** CONTRACT 4.6: an interrogation before any live batch (`initialState`), and the ones asked for later. */
  readonly initial?: Interrogation;
  readonly interrogations?: Observable<Interrogation>;
}

/**
 * One webhook's lane (CONTRACT 4.2, 4.4): RxJS glue over its state (`laneState.ts`, where the
 * rules and their invariants are). Every batch gets its first attempt in stream order, with at
 * most `maxInFlight` requests open; a batch waiting to be retried holds no request slot, so it
 * never holds back later batches. What the state says goes to the backlog is appended there; after
 * `circuitThreshold` failures in a row the circuit opens and the oldest backlog entry is sent as a
 * probe every `probeIntervalMs` until one answers 2xx; while the circuit is closed and redrivable
 * entries wait, they are re-sent oldest first. A webhook with `maxRequestsPerSecond` waits for the
 * rate cap's turn inside its request slot, so its cap never touches another lane. Every error is caught here, per batch: the lane
 * never errors, and other webhooks never notice any of it.
 */
export const webhookLane = (o: LaneOptions) => (batches$: Observable<Batch>): Observable<LaneResult> =>
  defer(() => {
    const { settings, index } = o.subscription;
    const scheduler = o.scheduler ?? asyncScheduler;
    const limiter = makeLimiter(settings.maxInFlight);
    const gate = settings.maxRequestsPerSecond === undefined ? undefined : rateGate(settings.maxRequestsPerSecond);
    /** Waits for the rate cap's turn, when the webhook has one (first attempts, retries, probes and redrive alike). */
    const turn$ = (): Observable<unknown> => {
      const wait = gate?.tryStart(scheduler.now()) ?? 0;
      return wait > 0 ? timer(wait, scheduler).pipe(mergeMap(turn$)) : of(0);
    };
    let state = L.initialLaneState(settings, o.initiallyDisabled === true);
    const mark = o.disabled ?? memoryDisabledMark();
    const wake$ = new Subject<void>();
    const done$ = new Subject<void>();
    const result = (batch: Batch, outcome: LaneOutcome): LaneResult => ({ webhook: index, batch, outcome });
    const report = () =>
      o.observer.status({ state: L.shownState(state, settings), consecutiveFailures: state.failures, inFlight: limiter.active(), queued: state.depth });
    const succeeded = () => {
      state = L.delivered(state);
      report();
    };
    /** 410 Gone (invariant 9): remembered in the store, then nothing more is sent. */
    const disable = (): Observable<unknown> => {
      const wasDisabled = state.disabled;
      state = L.gone(state);
      if (!wasDisabled) report();
      return mark.disable().pipe(catchError(() => of(null)), last(null, null));
    };
    const failed = () => {
      const [next, { opened }] = L.failed(state, settings);
      state = next;
      if (opened) wake$.next();
      report();
    };

    /**
     * Invariant 8: the batch is dead-lettered once its entry is written (the append retries until it
     * is). An interrogation run's request gets its body from the run's sender first (one that cannot
     * give it fails the run, which is begun again).
     */
    const toBacklog$ = (batch: Batch, reason: BacklogReason, error: string, attempts: number, sender?: RunSender): Observable<LaneResult> =>
      (sender === undefined ? of(batch) : sender.withBody(batch)).pipe(
        mergeMap((whole) => defer(() => o.backlog.append(whole, reason, error, attempts)).pipe(
          // the live append retries by itself; a port that fails anyway is tried again, never skipped
          retry({ delay: () => timer(settings.probeIntervalMs, scheduler) }),
          last(null, null),
        )),
        map(() => {
          const [next, { wake }] = L.appended(state, reason);
          state = next;
          if (wake) wake$.next();
          o.observer.finished(batch, 'deadlettered', attempts, error, reason);
          return result(batch, 'deadlettered');
        }),
      );

    /** One request in a slot; the answer classified. `post`: an interrogation run's own (4.6), else the lane's. */
    const send$ = (batch: Batch, post: PostBatch = o.post): Observable<{ r: AttemptResult; seconds: number }> => {
      let started = 0;
      return limiter.run(
        defer(turn$).pipe(
          take(1),
          mergeMap(() => {
            // disabled while it waited for its slot or turn: not sent (invariant 9)
            if (state.disabled) return of(NOT_SENT);
            started = scheduler.now();
            report();
            return post(batch);
          }),
        ).pipe(
          map((answer) => (answer === NOT_SENT ? DISABLED : classifyResponse(answer, scheduler.now()))),
          catchError((err: unknown) => of(classifyError(err))),
          map((r) => ({ r, seconds: (scheduler.now() - started) / 1000 })),
          finalize(report),
        ),
      );
    };

    /** Attempts with the usual retries; ends delivered, or failed with the reason and attempts. */
    const attempts$ = (batch: Batch, n: number, post?: PostBatch): Observable<{ ok: true } | { ok: false; retryable: boolean; error: string; attempts: number; gone?: true }> =>
      send$(batch, post).pipe(
        mergeMap(({ r, seconds }) => {
          const willRetry = !r.ok && r.retryable && n < settings.maxAttempts;
          if (r !== DISABLED) o.observer.attempt(r, n, seconds, willRetry);
          if (r.ok) return of({ ok: true as const });
          if (willRetry) {
            state = L.retryScheduled(state);
            report();
            return timer(r.retryAfterMs ?? o.backoff(n), scheduler).pipe(
              mergeMap(() => {
                state = L.retryDue(state);
                return attempts$(batch, n + 1, post);
              }),
            );
          }
          return of({ ok: false as const, retryable: r.retryable, error: r.retryable ? `${r.reason} after ${n} attempts` : r.reason, attempts: r === DISABLED ? n - 1 : n, ...(r.gone ? { gone: true as const } : {}) });
        }),
      );

    const live$ = (batch: Batch, sender?: RunSender): Observable<LaneResult> =>
      attempts$(batch, 1, sender?.post).pipe(
        mergeMap((end) => {
          if (end.ok) {
            succeeded();
            o.observer.finished(batch, 'delivered', 1);
            return of(result(batch, 'delivered'));
          }
          if (end.gone) return concat(disable().pipe(ignoreElements()), toBacklog$(batch, 'disabled', end.error, end.attempts, sender));
          failed();
          return toBacklog$(batch, end.retryable ? 'exhausted' : 'refused', end.error, end.attempts, sender);
        }),
      );

    // --- redrive and probes -------------------------------------------------------------------

    /** One backlog entry re-sent: with the usual retries (redrive), or one request (probe). */
    const redriveOne$ = (item: BacklogItem, probe: boolean): Observable<boolean | null> =>
      o.backlog.fetch(item).pipe(
        mergeMap((entry) => {
          if (entry === null) return of(null); // gone meanwhile (a replica, an operator, the cap): nothing to send
          const batch = backlogBatch(item, entry.body, 0, entry.traces);
          type End = { ok: true } | { ok: false; error: string; attempts: number; gone?: true };
          const end$: Observable<End> = probe
            ? send$(batch).pipe(map(({ r, seconds }): End => {
                if (r !== DISABLED) o.observer.attempt(r, item.attempts + 1, seconds, false);
                return r.ok ? { ok: true } : { ok: false, error: r.reason, attempts: 1, ...(r.gone ? { gone: true as const } : {}) };
              }))
            : attempts$(batch, 1);
          return end$.pipe(
            mergeMap((end) => {
              o.observer.redriven(item.webhookId, end.ok, end.ok ? undefined : end.error, batch);
              if (end.ok) {
                succeeded();
                return o.backlog.remove(item).pipe(map(() => true));
              }
              if (end.gone) return concat(disable().pipe(ignoreElements()), o.backlog.failedAgain(item, end.error, item.attempts + end.attempts)).pipe(last(null, null), map(() => false));
              failed();
              return o.backlog.failedAgain(item, end.error, item.attempts + end.attempts).pipe(map(() => false));
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
          if (delivered === true && state.open) {
            state = L.probeDelivered(state);
            report();
          }
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
        state = L.scanStarted(state);
        return o.backlog.pending();
      }).pipe(
        mergeMap((items) => {
          const before = state;
          state = L.scanned(state, items.length);
          if (items.length === 0) {
            if (state !== before) report();
            return of(null);
          }
          return o.backlog.lease().pipe(
            mergeMap((held) => {
              if (!held) return timer(settings.probeIntervalMs, scheduler);
              state = L.redriveStarted(state);
              report();
              // checked as each entry's turn comes: the circuit may open meanwhile, and the lease
              // (renewed on every entry) may have passed to another replica
              const next$ = (item: BacklogItem) =>
                defer(() => (state.open || state.disabled ? EMPTY : o.backlog.lease().pipe(mergeMap((still) => (still ? redriveOne$(item, false) : EMPTY)))));
              return from(items).pipe(
                mergeMap(next$, settings.maxInFlight),
                finalize(() => {
                  state = L.redriveEnded(state);
                  report();
                }),
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
        mergeMap(() => mark.isDisabled()),
        map((still) => {
          if (!still && state.disabled) {
            state = L.enabled(state);
            report();
          }
        }),
        catchError(() => of(null)),
      );

    const redrive$ = defer(function step(): Observable<unknown> {
      const what = L.nextRedrive(state, settings);
      const next$ = what === 'watch' ? watch$() : what === 'probe' ? probe$() : what === 'pass' ? pass$() : wake$.pipe(take(1));
      return concat(next$.pipe(ignoreElements()), defer(step));
    }).pipe(takeUntil(done$), ignoreElements());

    /**
     * A batch (a live one, its part, or an interrogation's request) as its arrival says
     * (invariants 1–4); a live batch after the interrogations asked for before it (10), an
     * interrogation's own request (`inOrder` false) at once.
     */
    const handle$ = (batch: Batch, part: Batch | null, done: boolean, inOrder = true, sender?: RunSender): Observable<LaneResult> => {
      const [next, arrival] = L.arrive(state, settings, part === null || done);
      state = next;
      switch (arrival.kind) {
        case 'skip':
          return of(result(batch, 'skipped'));
        case 'backlog':
          return toBacklog$(part!, arrival.reason, arrival.error, 0, sender).pipe(map(asBatch(batch)));
        case 'live': {
          o.observer.queueDepth(state.depth);
          const work$ = live$(part!, sender).pipe(
            map(asBatch(batch)),
            finalize(() => {
              state = L.liveFinished(state);
              o.observer.queueDepth(state.depth);
            }),
          );
          return inOrder ? afterGate(work$) : work$;
        }
      }
    };

    // --- interrogations (CONTRACT 4.6) --------------------------------------------------------

    /**
     * Invariant 10 (the order of an interrogation): a batch that arrives after an interrogation
     * was asked for waits until that interrogation ended (every request 2xx or in the backlog);
     * an interrogation begins once every batch that arrived before it was asked for has been
     * given its turn (first attempts in arrival order, through the one request limiter). `order`
     * is the end of the last interrogation asked for, or null when none is under way.
     */
    let order: AsyncSubject<true> | null = null;
    const afterGate = <A>(work: Observable<A>): Observable<A> => {
      const g = order;
      return g === null ? work : g.pipe(mergeMap(() => work));
    };
    const observe = (e: InterrogationEvent) => o.observer.interrogation?.(e);
    /** One run: its requests pulled `maxInFlight` at a time, each handled as a batch; begun again (a new P) after a failure. */
    const run$ = (g: Interrogation): Observable<never> =>
      defer(() => {
        const run = g.begin();
        let requests = 0;
        let ended = false;
        observe({ kind: 'started', cause: g.cause });
        const request$ = (b: Batch) => {
          requests++;
          return handle$(b, b, false, false, run.sender).pipe(tap((r) => r.outcome === 'delivered' && observe({ kind: 'sent', points: b.size })));
        };
        return concat(pullEach(() => run.next(), settings.maxInFlight, request$), defer(() => run.completed()).pipe(ignoreElements())).pipe(
          tap({ complete: () => ((ended = true), observe(run.skipped?.() === true ? { kind: 'skipped' } : { kind: 'completed', cause: g.cause, requests })) }),
          finalize(() => ended || run.cancel()),
          catchError((err: unknown) => {
            ended = true;
            run.cancel();
            observe({ kind: 'failed', cause: g.cause, error: err instanceof Error ? err.message : String(err) });
            return timer(settings.probeIntervalMs, scheduler).pipe(mergeMap(() => run$(g)));
          }),
        );
      }) as Observable<never>;
    const asked = (g: Interrogation): Observable<LaneResult> => {
      const before = order;
      const ended = new AsyncSubject<true>();
      order = ended;
      // released when it ended, not when the lane is unsubscribed (a stop): what waits behind it then is never sent
      const work$ = run$(g).pipe(tap({ complete: () => {
        if (order === ended) order = null;
        ended.next(true);
        ended.complete();
      } }));
      return before === null ? work$ : before.pipe(mergeMap(() => work$));
    };

    const { key } = o.subscription;
    /** The batch's result, for the batch the pipeline gave (the part sent may be another object). */
    const asBatch = (batch: Batch) => (r: LaneResult): LaneResult => (r.batch === batch ? r : { ...r, batch });
    const batchesEnded$ = new Subject<void>();
    // the initial interrogation is asked for before the first batch can arrive
    const initial$ = o.initial === undefined ? EMPTY : asked(o.initial);
    const lane$ = merge(
      initial$,
      (o.interrogations ?? EMPTY).pipe(takeUntil(batchesEnded$), mergeMap(asked)),
      batches$.pipe(
        finalize(() => batchesEnded$.next()),
        // a filtered webhook gets its part of the batch, or nothing (CONTRACT 4.5)
        mergeMap((batch) => handle$(batch, batch.parts?.has(key) === true ? batch.parts.get(key)! : batch, batch.done.has(key))),
      ),
    ).pipe(finalize(() => done$.next()));
    report();
    return merge(lane$, redrive$) as Observable<LaneResult>;
  });
