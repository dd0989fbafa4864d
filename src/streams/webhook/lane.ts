import {
  AsyncSubject, asyncScheduler, catchError, concat, defer, EMPTY, filter, finalize, ignoreElements, last, map, merge, mergeMap, type Observable, of, retry,
  type SchedulerLike, Subject, takeUntil, tap, timer,
} from 'rxjs';
import type { Batch } from '../read/batches';
import type { LaneBacklog } from './backlog';
import type { BacklogReason } from './backlogEntry';
import { defaultBodyOver, formatOf, prepareBody, requestBody, withBody, type BodyFormat, type Prepared } from './body';
import { tooLong } from './jsonataEval';
import { memoryDisabledMark, type DisabledMark } from './disabledMarks';
import * as L from './laneState';
import { laneRedrive, type RedriveContext } from './redrive';
import { webhookSending, type AttemptEvent, type AttemptsEnd } from './sending';
import type { LaneObserver, LaneOutcome, LaneResult } from './laneObserver';
import type { WebhookSubscription } from './subscription';
import { pullEach, type Interrogation, type InterrogationEvent, type RunSender } from './interrogation';
import type { AttemptResult, PostBatch } from './answers';

export type { LaneObserver, LaneOutcome, LaneResult, LaneStatus } from './laneObserver';
export type { WebhookState } from './laneState';

/** Events the status always hears of, whether or not what it shows changed: the backlog count it also shows may have. */
const REPORTED: ReadonlySet<L.LaneEvent['kind']> = new Set(['delivered', 'failed', 'retryScheduled', 'redriveStarted', 'redriveEnded']);

/** An attempt not made because the webhook was disabled meanwhile: it ends as a 410 would. */
const DISABLED: AttemptResult = { ok: false, retryable: false, reason: 'webhook disabled: it answered 410 Gone', gone: true };

export interface LaneOptions {
  readonly subscription: WebhookSubscription;
  /** The webhook's 410 mark; `initiallyDisabled` is what it said at start. */
  readonly disabled?: DisabledMark;
  readonly initiallyDisabled?: boolean;
  /** The subscription's own client (`client.ts`); marble tests pass cold observables. */
  readonly post: PostBatch;
  readonly backoff: (attempt: number) => number;
  readonly backlog: LaneBacklog;
  readonly observer: LaneObserver;
  readonly scheduler?: SchedulerLike;
  /** CONTRACT 4.6: an interrogation before any live batch (`initialState`), and the ones asked for later. */
  readonly initial?: Interrogation;
  readonly interrogations?: Observable<Interrogation>;
  /** What a batch comes to in the webhook's format (`prepareBody`, CONTRACT 4.7); marble tests pass cold observables. */
  readonly render?: (format: BodyFormat, batch: Batch) => Observable<Prepared>;
  /** The webhook's format, when not `formatOf` its settings (tests: a JSONata format whose evaluator is a fake). */
  readonly format?: BodyFormat;
}

/**
 * One webhook's lane (CONTRACT 4.2, 4.4): RxJS glue over its state (`laneState.ts`, where the
 * rules and their invariants are). Every batch gets its first attempt in stream order, with at
 * most `maxInFlight` requests open (`sending.ts`); a batch waiting to be retried holds no request
 * slot, so it never holds back later batches. What the state says goes to the backlog is appended
 * there; after `circuitThreshold` failures in a row the circuit opens and the backlog is probed
 * and, once it closes, redriven (`redrive.ts`). Everything that happens is dispatched to the
 * state's one reducer (`L.step`): the lane's glue never assigns the state itself. Every error is
 * caught here, per batch: the lane never errors, and other webhooks never notice any of it.
 */
export const webhookLane = (o: LaneOptions) => (batches$: Observable<Batch>): Observable<LaneResult> =>
  defer(() => {
    const { settings, index } = o.subscription;
    const scheduler = o.scheduler ?? asyncScheduler;
    const format = o.format ?? formatOf(o.subscription.webhook, settings.maxBodyBytes);
    const render = o.render ?? ((f: BodyFormat, b: Batch) => defer(() => prepareBody(f, b)));
    let state = L.initialLaneState(settings, o.initiallyDisabled === true);
    /** Tells the redrive the backlog may have work (`redrive.ts`); `done$`: the lane's batches and interrogations are over. */
    const wake$ = new Subject<void>();
    const done$ = new Subject<void>();
    const report = () =>
      o.observer.status({ state: L.shownState(state, settings), consecutiveFailures: state.failures, inFlight: sending.inFlight(), queued: state.depth });
    /**
     * The one place the state changes: each event folded in by the reducer. The status hears of
     * every change it shows, and of the events after which its backlog count may have moved.
     */
    const dispatch = (e: L.LaneEvent): L.StepOutput => {
      const [next, out] = L.step(state, settings, e);
      const before = state;
      state = next;
      if (REPORTED.has(e.kind) || L.shownChanged(before, next, settings)) report();
      if (out.wake === true) wake$.next();
      return out;
    };
    const sending = webhookSending({
      settings, post: o.post, backoff: o.backoff, scheduler,
      // disabled while it waited for its slot or turn: not sent (invariant 9)
      instead: () => (state.disabled ? DISABLED : undefined),
      slots: () => report(),
    });
    const mark = o.disabled ?? memoryDisabledMark();
    const result = (batch: Batch, outcome: LaneOutcome): LaneResult => ({ webhook: index, batch, outcome });
    const attempted = (events$: Observable<AttemptEvent>): Observable<AttemptsEnd> =>
      events$.pipe(
        tap((e) => {
          if (e.kind === 'attempted' && e.a.sent) o.observer.attempt(e.a.r, e.attempt, e.a.seconds, e.willRetry);
          else if (e.kind === 'waiting') dispatch({ kind: 'retryScheduled' });
          else if (e.kind === 'due') dispatch({ kind: 'retryDue' });
        }),
        filter((e): e is Extract<AttemptEvent, { kind: 'ended' }> => e.kind === 'ended'),
        map((e) => e.end),
      );
    const disable = (): Observable<unknown> => {
      dispatch({ kind: 'gone' });
      return mark.disable().pipe(catchError(() => of(null)), last(null, null));
    };
    const ctx: RedriveContext = { o, settings, scheduler, sending, mark, state: () => state, dispatch, disable, attempted, wake$ };

    /**
     * Invariant 8: dead-lettered once its entry is written (the append retries until it is), with the
     * body it carries (`ready$`); an interrogation's request gets it from its run's sender first.
     */
    const toBacklog$ = (batch: Batch, reason: BacklogReason, error: string, attempts: number, sender?: RunSender): Observable<LaneResult> =>
      (sender === undefined ? of(batch) : sender.withBody(batch)).pipe(
        mergeMap((whole) => defer(() => o.backlog.append(whole, requestBody(whole), reason, error, attempts)).pipe(
          // the live append retries by itself; a port that fails anyway is tried again, never skipped
          retry({ delay: () => timer(settings.probeIntervalMs, scheduler) }),
          last(null, null),
        )),
        map(() => {
          dispatch({ kind: 'appended', reason });
          o.observer.finished(batch, 'deadlettered', attempts, error, reason);
          return result(batch, 'deadlettered');
        }),
      );

    /**
     * CONTRACT 4.7: what this webhook sends for a batch, decided once, before its first attempt or
     * its backlog entry: the batch carrying its body in the webhook's format (`withBody`; the default
     * body is made as the request goes out, a stored one goes as stored, an interrogation's stays on
     * its thread), nothing to send, or a failure to render.
     */
    type Ready = { readonly kind: 'send'; readonly batch: Batch } | { readonly kind: 'nothing' } | { readonly kind: 'failed'; readonly error: string };
    const ready$ = (batch: Batch): Observable<Ready> => {
      const { content } = batch;
      // an interrogation's request was rendered on its thread, which says what came of it
      if (content.kind === 'elsewhere') {
        if (content.skipped !== undefined) o.observer.pointsSkipped?.(content.skipped);
        return of(content.renderError === undefined ? { kind: 'send', batch } : { kind: 'failed', error: content.renderError });
      }
      if (format.type === 'datapoints' || content.kind === 'stored') {
        // the default body is made as its request goes out: its size (CONTRACT 4.7 "Size") is known before
        const over = format.type === 'datapoints' ? defaultBodyOver(batch, format.maxBodyBytes) : undefined;
        return of(over !== undefined ? { kind: 'failed', error: tooLong(over) } : { kind: 'send', batch });
      }
      return render(format, batch).pipe(map((p: Prepared): Ready => {
        if (p.kind !== 'failed' && p.skipped > 0) o.observer.pointsSkipped?.(p.skipped);
        return p.kind === 'body' ? { kind: 'send', batch: withBody(batch, p.body) } : p;
      }));
    };

    /** Nothing to send for this webhook: delivered (CONTRACT 4.7), live or not. */
    const nothingToSend = (batch: Batch, live: boolean): LaneResult => {
      if (live) dispatch({ kind: 'delivered' });
      o.observer.finished(batch, 'delivered', 0);
      return result(batch, 'delivered');
    };

    /**
     * To the backlog without an attempt (circuit, overflow, disabled, behind older backlog), rendered
     * first (CONTRACT 4.7): the entry keeps the body its webhook takes; nothing to send is delivered.
     */
    const unsent$ = (batch: Batch, reason: BacklogReason, error: string, sender?: RunSender): Observable<LaneResult> =>
      // an expression slower than its batches come: past a queue's worth of waiting evaluations the
      // batch is refused rather than held in memory without bound (counted and logged as any)
      (format.type === 'jsonata' && (batch.content.kind === 'text' || batch.content.kind === 'bytes') && format.evaluator.waiting() >= settings.queueCap
        ? of<Ready>({ kind: 'failed', error: `${format.evaluator.waiting()} batches wait for this expression's evaluation (its queue is full)` })
        : ready$(batch)
      ).pipe(mergeMap((r) => {
        switch (r.kind) {
          case 'send': return toBacklog$(r.batch, reason, error, 0, sender);
          case 'nothing': return of(nothingToSend(batch, false));
          case 'failed': return renderFailed$(batch, r.error, sender);
        }
      }));

    /** A live batch: rendered, then its attempts; nothing to send counts as delivered; a failure to render is refused at once. */
    const live$ = (batch: Batch, sender?: RunSender): Observable<LaneResult> =>
      ready$(batch).pipe(mergeMap((r) => {
        switch (r.kind) {
          case 'send': return attempts$(r.batch, sender);
          case 'nothing': return of(nothingToSend(batch, true));
          case 'failed': return renderFailed$(batch, r.error, sender);
        }
      }));

    /** A batch that cannot be rendered for this webhook: to the backlog at once, refused, with the default body (its thread's, for an interrogation's). */
    const renderFailed$ = (batch: Batch, error: string, sender?: RunSender): Observable<LaneResult> => {
      o.observer.renderFailed?.(batch, error);
      // the batch as it came carries no rendering: its default body (its thread's, for an interrogation's)
      return toBacklog$(batch, 'refused', `format: ${error}`, 0, sender);
    };

    /** A batch's attempts (by the lane's client, or an interrogation run's `post`), then delivered or to the backlog. */
    const attempts$ = (batch: Batch, sender?: RunSender): Observable<LaneResult> =>
      attempted(sending.attempts$(batch, sender?.post)).pipe(
        mergeMap((end) => {
          if (end.ok) {
            dispatch({ kind: 'delivered' });
            o.observer.finished(batch, 'delivered', 1);
            return of(result(batch, 'delivered'));
          }
          if (end.gone) return concat(disable().pipe(ignoreElements()), toBacklog$(batch, 'disabled', end.error, end.attempts, sender));
          dispatch({ kind: 'failed' });
          return toBacklog$(batch, end.retryable ? 'exhausted' : 'refused', end.error, end.attempts, sender);
        }),
      );

    /**
     * A batch (a live one, its part, or an interrogation's request) as its arrival says
     * (invariants 1–4); a live batch after the interrogations asked for before it (10), an
     * interrogation's own request (`inOrder` false) at once.
     */
    const handle$ = (batch: Batch, part: Batch | null, done: boolean, inOrder = true, sender?: RunSender): Observable<LaneResult> => {
      const arrival = dispatch({ kind: 'arrived', nothingToSend: part === null || done }).arrival!;
      switch (arrival.kind) {
        case 'skip':
          return of(result(batch, 'skipped'));
        case 'backlog':
          return unsent$(part!, arrival.reason, arrival.error, sender).pipe(map(asBatch(batch)));
        case 'live': {
          o.observer.queueDepth(state.depth);
          const work$ = live$(part!, sender).pipe(
            map(asBatch(batch)),
            finalize(() => {
              dispatch({ kind: 'liveFinished' });
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
    return merge(lane$, laneRedrive(ctx).pipe(takeUntil(done$), ignoreElements())) as Observable<LaneResult>;
  });
