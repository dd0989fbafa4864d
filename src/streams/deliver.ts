import {
  asyncScheduler, catchError, defer, finalize, map, mergeMap, type Observable, of, type SchedulerLike, timer,
} from 'rxjs';
import type { Webhook } from '../config/managed';
import type { Batch } from './batches';
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

/** Hooks for logs and metrics, called at the edge; the lane itself never logs. */
export interface LaneObserver {
  attempt(result: AttemptResult, attempt: number, seconds: number, willRetry: boolean): void;
  finished(batch: Batch, outcome: LaneOutcome, attempts: number, reason?: string): void;
  queueDepth(depth: number): void;
}

export interface LaneOptions {
  readonly index: number;
  readonly webhook: Webhook;
  /** The webhook as the delivery records know it (`webhookKey`). */
  readonly key: string;
  readonly post: PostBatch;
  readonly maxAttempts: number;
  readonly maxInFlight: number;
  /** Batches accepted and not yet finished; beyond it a batch is dead-lettered at once. */
  readonly queueCap: number;
  readonly backoff: (attempt: number) => number;
  /** Appends to the dead-letter stream; its errors are caught by the lane. */
  readonly deadLetter: (webhook: Webhook, batch: Batch, error: string, attempts: number) => Observable<unknown>;
  readonly observer: LaneObserver;
  readonly scheduler?: SchedulerLike;
}

export const QUEUE_CAP = 1000;

/**
 * One webhook's lane: every batch gets its first attempt in stream order, with at most
 * `maxInFlight` requests open; a batch waiting to be retried holds no request slot, so it never
 * holds back later batches. Every error is caught here, per batch: the lane never errors.
 */
export const webhookLane = (o: LaneOptions) => (batches$: Observable<Batch>): Observable<LaneResult> =>
  defer(() => {
    const scheduler = o.scheduler ?? asyncScheduler;
    const limiter = makeLimiter(o.maxInFlight);
    let depth = 0;
    const result = (batch: Batch, outcome: LaneOutcome): LaneResult => ({ webhook: o.index, batch, outcome });

    const deadLetter$ = (batch: Batch, reason: string, attempts: number): Observable<LaneResult> =>
      defer(() => o.deadLetter(o.webhook, batch, reason, attempts)).pipe(
        catchError(() => of(null)),
        map(() => {
          o.observer.finished(batch, 'deadlettered', attempts, reason);
          return result(batch, 'deadlettered');
        }),
      );

    const attempt$ = (batch: Batch, n: number): Observable<LaneResult> => {
      let started = 0;
      return limiter
        .run(
          defer(() => {
            started = scheduler.now();
            return o.post(o.webhook, batch);
          }).pipe(
            map((r) => classifyResponse(r, scheduler.now())),
            catchError((err: unknown) => of(classifyError(err))),
          ),
        )
        .pipe(
          mergeMap((r) => {
            const willRetry = !r.ok && r.retryable && n < o.maxAttempts;
            o.observer.attempt(r, n, (scheduler.now() - started) / 1000, willRetry);
            if (r.ok) {
              o.observer.finished(batch, 'delivered', n);
              return of(result(batch, 'delivered'));
            }
            if (willRetry) {
              const wait = r.retryAfterMs ?? o.backoff(n);
              return timer(wait, scheduler).pipe(mergeMap(() => attempt$(batch, n + 1)));
            }
            return deadLetter$(batch, r.retryable ? `${r.reason} after ${n} attempts` : r.reason, n);
          }),
        );
    };

    return batches$.pipe(
      mergeMap((batch) => {
        if (batch.done.has(o.key)) return of(result(batch, 'skipped'));
        if (depth >= o.queueCap) return deadLetter$(batch, `queue full (${o.queueCap} batches)`, 0);
        depth++;
        o.observer.queueDepth(depth);
        return attempt$(batch, 1).pipe(
          finalize(() => {
            depth--;
            o.observer.queueDepth(depth);
          }),
        );
      }),
    );
  });
