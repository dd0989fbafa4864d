import {
  asyncScheduler, catchError, concat, defer, EMPTY, finalize, from, ignoreElements, map, merge, mergeMap, type Observable, of, type SchedulerLike,
  Subject, take, takeUntil, timer,
} from 'rxjs';
import type { Webhook } from '../config/managed';
import type { Batch } from './batches';
import { REDRIVABLE, type BacklogItem, type BacklogReason, type LaneBacklog } from './backlog';
import { makeLimiter } from './limiter';

/** What a webhook answered. A timeout or network failure is an error of the observable instead. */
export interface WebhookResponse {
  readonly status: number;
  readonly retryAfter?: string | undefined;
}

/** The effect of sending one attempt; the live one is axios, marble tests pass cold observables. */
export type PostBatch = (webhook: Webhook, batch: Batch) => Observable<WebhookResponse>;

export type AttemptResult =
  | { readonly ok: true; readonly status: number }
  | { readonly ok: false; readonly retryable: boolean; readonly status?: number; readonly reason: string; readonly retryAfterMs?: number };

export const RETRY_AFTER_CAP_MS = 30_000;

/** `Retry-After` as seconds or an HTTP date, capped at 30 s; undefined when absent or unreadable. */
export const parseRetryAfter = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined;
  const v = value.trim();
  const ms = /^[0-9]+$/.test(v) ? Number(v) * 1000 : Date.parse(v) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), RETRY_AFTER_CAP_MS) : undefined;
};

/** CONTRACT 4.2: 2xx success; 408, 429, 5xx retried (honouring Retry-After on 429/503); other answers not. */
export const classifyResponse = (r: WebhookResponse, now: number): AttemptResult => {
  const s = r.status;
  if (s >= 200 && s < 300) return { ok: true, status: s };
  const retryable = s === 408 || s === 429 || s >= 500;
  const retryAfterMs = s === 429 || s === 503 ? parseRetryAfter(r.retryAfter, now) : undefined;
  return { ok: false, retryable, status: s, reason: `HTTP ${s}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
};

export const classifyError = (err: unknown): AttemptResult => ({
  ok: false,
  retryable: true,
  reason: err instanceof Error ? err.message : String(err),
});

/** About 0.5 s, 1 s, 2 s, 4 s … with ±25 % jitter, so that webhooks retried together spread out. */
export const exponentialBackoff = (random: () => number = Math.random) => (attempt: number): number =>
  Math.round(500 * 2 ** (attempt - 1) * (0.75 + random() * 0.5));

/** `skipped`: a re-formed batch this webhook has already (CONTRACT 4.3): not sent again. */
export type LaneOutcome = 'delivered' | 'deadlettered' | 'skipped';

export interface LaneResult {
  readonly webhook: number;
  readonly batch: Batch;
  readonly outcome: LaneOutcome;
}

/** The state of a webhook as `GET /api/webhooks` and `webhook_state` show it (CONTRACT 4.4). */
export type WebhookState = 'healthy' | 'retrying' | 'open' | 'redriving';

/** Hooks for logs, metrics and the delivery status, called at the edge; the lane itself never logs. */
export interface LaneObserver {
  attempt(result: AttemptResult, attempt: number, seconds: number, willRetry: boolean): void;
  finished(batch: Batch, outcome: LaneOutcome, attempts: number, reason?: string, backlogReason?: BacklogReason): void;
  queueDepth(depth: number): void;
  /** Every change of state, in-flight requests or consecutive failures. */
  status(s: LaneStatus): void;
  /** A backlog entry redriven (or probed): delivered, or failed again. */
  redriven(webhookId: string, delivered: boolean, reason?: string): void;
}

export interface LaneStatus {
  readonly state: WebhookState;
  readonly consecutiveFailures: number;
  readonly inFlight: number;
  readonly queued: number;
}

export interface LaneOptions {
  readonly index: number;
  readonly webhook: Webhook;
  /** The webhook as the delivery records know it (`webhookKey`). */
  readonly key: string;
  readonly post: PostBatch;
  readonly maxAttempts: number;
  readonly maxInFlight: number;
  /** Batches accepted and not yet finished; beyond it a batch goes to the backlog at once. */
  readonly queueCap: number;
  readonly backoff: (attempt: number) => number;
  readonly backlog: LaneBacklog;
  /** Batches in a row ending in the backlog as exhausted or refused that open the circuit. */
  readonly circuitThreshold: number;
  readonly probeIntervalMs: number;
  readonly autoRedrive: boolean;
  readonly observer: LaneObserver;
  readonly scheduler?: SchedulerLike;
}

export const QUEUE_CAP = 1000;

/**
 * One webhook's lane (CONTRACT 4.2, 4.4). Every batch gets its first attempt in stream order,
 * with at most `maxInFlight` requests open; a batch waiting to be retried holds no request slot,
 * so it never holds back later batches. A batch that exhausts its attempts, is refused or
 * overflows the queue goes to the webhook's backlog. After `circuitThreshold` batches in a row end
 * there as exhausted or refused, the circuit opens: new batches go straight to the backlog and the
 * oldest backlog entry is sent as a probe every `probeIntervalMs`, until one answers 2xx. While
 * the circuit is closed and the backlog holds redrivable entries, they are re-sent oldest first,
 * and new batches join the end of the backlog instead of overtaking it, so that first attempts
 * reach the receiver in stream order. Every error is caught here, per batch: the lane never
 * errors, and other webhooks never notice any of it.
 */
export const webhookLane = (o: LaneOptions) => (batches$: Observable<Batch>): Observable<LaneResult> =>
  defer(() => {
    const scheduler = o.scheduler ?? asyncScheduler;
    const limiter = makeLimiter(o.maxInFlight);
    let depth = 0;
    let waitingRetry = 0;
    let failures = 0;
    let open = false;
    /**
     * Redrivable entries may wait in the backlog: set by appends, cleared by an empty scan. Unknown
     * at the start (a previous run may have left some): true until the first scan says otherwise.
     */
    let backlogWaits = o.autoRedrive;
    /** Appends since the redrive's last scan began: an empty scan only counts when none came meanwhile. */
    let appendsSinceScan = 0;
    let redriving = false;
    const wake$ = new Subject<void>();
    const done$ = new Subject<void>();
    const result = (batch: Batch, outcome: LaneOutcome): LaneResult => ({ webhook: o.index, batch, outcome });
    const state = (): WebhookState =>
      open ? 'open' : redriving || (o.autoRedrive && backlogWaits) ? 'redriving' : waitingRetry > 0 ? 'retrying' : 'healthy';
    const report = () => o.observer.status({ state: state(), consecutiveFailures: failures, inFlight: limiter.active(), queued: depth });
    /** A batch that ended in the backlog as exhausted or refused counts toward the circuit; a 2xx resets it. */
    const failed = () => {
      failures++;
      if (failures >= o.circuitThreshold && !open) {
        open = true;
        wake$.next();
      }
      report();
    };
    const succeeded = () => {
      failures = 0;
      report();
    };

    const toBacklog$ = (batch: Batch, reason: BacklogReason, error: string, attempts: number): Observable<LaneResult> =>
      defer(() => o.backlog.append(batch, reason, error, attempts)).pipe(
        catchError(() => of(null)),
        map(() => {
          if (REDRIVABLE.has(reason)) {
            backlogWaits = true;
            appendsSinceScan++;
            wake$.next();
          }
          o.observer.finished(batch, 'deadlettered', attempts, error, reason);
          return result(batch, 'deadlettered');
        }),
      );

    /** One request in a slot; the answer classified. */
    const send$ = (batch: Batch): Observable<{ r: AttemptResult; seconds: number }> => {
      let started = 0;
      return limiter.run(
        defer(() => {
          started = scheduler.now();
          report();
          return o.post(o.webhook, batch);
        }).pipe(
          map((answer) => classifyResponse(answer, scheduler.now())),
          catchError((err: unknown) => of(classifyError(err))),
          map((r) => ({ r, seconds: (scheduler.now() - started) / 1000 })),
          finalize(report),
        ),
      );
    };

    /** Attempts with the usual retries; ends delivered, or failed with the reason and attempts. */
    const attempts$ = (batch: Batch, n: number): Observable<{ ok: true } | { ok: false; retryable: boolean; error: string; attempts: number }> =>
      send$(batch).pipe(
        mergeMap(({ r, seconds }) => {
          const willRetry = !r.ok && r.retryable && n < o.maxAttempts;
          o.observer.attempt(r, n, seconds, willRetry);
          if (r.ok) return of({ ok: true as const });
          if (willRetry) {
            waitingRetry++;
            report();
            return timer(r.retryAfterMs ?? o.backoff(n), scheduler).pipe(
              mergeMap(() => {
                waitingRetry--;
                return attempts$(batch, n + 1);
              }),
            );
          }
          return of({ ok: false as const, retryable: r.retryable, error: r.retryable ? `${r.reason} after ${n} attempts` : r.reason, attempts: n });
        }),
      );

    const live$ = (batch: Batch): Observable<LaneResult> =>
      attempts$(batch, 1).pipe(
        mergeMap((end) => {
          if (end.ok) {
            succeeded();
            o.observer.finished(batch, 'delivered', 1);
            return of(result(batch, 'delivered'));
          }
          failed();
          return toBacklog$(batch, end.retryable ? 'exhausted' : 'refused', end.error, end.attempts);
        }),
      );

    // --- redrive and probes -------------------------------------------------------------------

    const asBatch = (item: BacklogItem, body: string): Batch => ({
      webhookId: item.webhookId, first: item.webhookId.split('_')[0] ?? item.id, ids: [], body, size: 0, recorded: true, done: new Set(),
    });

    /** One backlog entry re-sent: with the usual retries (redrive), or one request (probe). */
    const redriveOne$ = (item: BacklogItem, probe: boolean): Observable<boolean | null> =>
      o.backlog.fetch(item).pipe(
        mergeMap((body) => {
          if (body === null) return of(null); // gone meanwhile (a replica, an operator, the cap): nothing to send
          const batch = asBatch(item, body);
          type End = { ok: true } | { ok: false; error: string; attempts: number };
          const end$: Observable<End> = probe
            ? send$(batch).pipe(map(({ r, seconds }): End => {
                o.observer.attempt(r, item.attempts + 1, seconds, false);
                return r.ok ? { ok: true } : { ok: false, error: r.reason, attempts: 1 };
              }))
            : attempts$(batch, 1);
          return end$.pipe(
            mergeMap((end) => {
              o.observer.redriven(item.webhookId, end.ok, end.ok ? undefined : end.error);
              if (end.ok) {
                succeeded();
                return o.backlog.remove(item).pipe(map(() => true));
              }
              failed();
              return o.backlog.failedAgain(item, end.error, item.attempts + end.attempts).pipe(map(() => false));
            }),
          );
        }),
        catchError(() => of(false)),
      );

    /** While the circuit is open: every probe interval, the oldest redrivable entry, once. */
    const probe$ = (): Observable<unknown> =>
      timer(o.probeIntervalMs, scheduler).pipe(
        mergeMap(() => o.backlog.lease()),
        mergeMap((held) => (held ? o.backlog.pending() : of([] as BacklogItem[]))),
        mergeMap((items) => (items.length === 0 ? of(false) : redriveOne$(items[0]!, true))),
        map((delivered) => {
          if (delivered === true && open) {
            open = false;
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
        appendsSinceScan = 0;
        return o.backlog.pending();
      }).pipe(
        mergeMap((items) => {
          if (items.length === 0) {
            if (appendsSinceScan === 0) {
              backlogWaits = false;
              report();
            }
            return of(null);
          }
          return o.backlog.lease().pipe(
            mergeMap((held) => {
              if (!held) return timer(o.probeIntervalMs, scheduler);
              redriving = true;
              report();
              // checked as each entry's turn comes: the circuit may open meanwhile, and the lease
              // (renewed on every entry) may have passed to another replica
              const next$ = (item: BacklogItem) =>
                defer(() => (open ? EMPTY : o.backlog.lease().pipe(mergeMap((still) => (still ? redriveOne$(item, false) : EMPTY)))));
              return from(items).pipe(
                mergeMap(next$, o.maxInFlight),
                finalize(() => {
                  redriving = false;
                  report();
                }),
              );
            }),
          );
        }),
        ignoreElements(),
        catchError(() => timer(o.probeIntervalMs, scheduler)),
      );

    const redrive$ = defer(function step(): Observable<unknown> {
      const next$ = open ? probe$() : o.autoRedrive && backlogWaits ? pass$() : wake$.pipe(take(1));
      return concat(next$.pipe(ignoreElements()), defer(step));
    }).pipe(takeUntil(done$), ignoreElements());

    const lane$ = batches$.pipe(
      mergeMap((batch) => {
        if (batch.done.has(o.key)) return of(result(batch, 'skipped'));
        // CONTRACT 4.4: an open circuit, or older backlog entries waiting, send new batches to the backlog
        if (open) return toBacklog$(batch, 'circuit', 'circuit open', 0);
        if (o.autoRedrive && backlogWaits) return toBacklog$(batch, 'circuit', 'older batches wait in the backlog', 0);
        if (depth >= o.queueCap) return toBacklog$(batch, 'overflow', `queue full (${o.queueCap} batches)`, 0);
        depth++;
        o.observer.queueDepth(depth);
        return live$(batch).pipe(
          finalize(() => {
            depth--;
            o.observer.queueDepth(depth);
          }),
        );
      }),
      finalize(() => done$.next()),
    );
    report();
    return merge(lane$, redrive$) as Observable<LaneResult>;
  });
