import { asyncScheduler, catchError, concat, defer, finalize, map, mergeMap, type Observable, of, type SchedulerLike, take, timer } from 'rxjs';
import type { Batch } from '../read/batches';
import { classifyError, classifyResponse, type AttemptResult, type PostBatch } from './answers';
import { makeLimiter } from './limiter';
import { rateGate } from './rateGate';
import type { DeliverySettings } from './subscription';

/**
 * How a webhook's requests go out (CONTRACT 4.2, 4.5): each in one of its `maxInFlight` request
 * slots, after its rate cap's turn (`maxRequestsPerSecond`: waited for inside the slot, so a cap
 * never touches another webhook), its answer classified; and with the usual retries — backoff, a
 * `Retry-After` honoured up to 30 s — up to `maxAttempts`. The lane, the operator's `deadletter
 * replay` and `webhooks resend` all send through one of these per webhook.
 */
export interface SendingOptions {
  readonly settings: Pick<DeliverySettings, 'maxInFlight' | 'maxAttempts' | 'maxRequestsPerSecond'>;
  /** The webhook's client (`client.ts`); marble tests pass cold observables. */
  readonly post: PostBatch;
  readonly backoff: (attempt: number) => number;
  readonly scheduler?: SchedulerLike;
  /**
   * Asked when a request's slot and turn have come: a result to end it with instead of sending it
   * (the lane's webhook disabled meanwhile), or undefined to send it.
   */
  readonly instead?: () => AttemptResult | undefined;
  /** Told when a request goes out and when its slot is free again (the lane's in-flight count). */
  readonly slots?: () => void;
}

/** One attempt: its result, how long it took, and whether it went out at all (`instead`). */
export interface Attempt {
  readonly r: AttemptResult;
  readonly seconds: number;
  readonly sent: boolean;
}

/** How a batch's attempts ended: delivered, or not, with the error (and the attempts) to record. */
export type AttemptsEnd =
  | { readonly ok: true }
  | { readonly ok: false; readonly retryable: boolean; readonly error: string; readonly attempts: number; readonly gone?: true };

/** What happens while a batch is tried: each attempt, each wait for a retry and its end, and how it all ended. */
export type AttemptEvent =
  | { readonly kind: 'attempted'; readonly attempt: number; readonly a: Attempt; readonly willRetry: boolean }
  | { readonly kind: 'waiting' }
  | { readonly kind: 'due' }
  | { readonly kind: 'ended'; readonly end: AttemptsEnd };

export interface Sending {
  /** One request in a slot, after its turn; the answer classified (a failure to send is a result too, never an error). */
  once$(batch: Batch, post?: PostBatch): Observable<Attempt>;
  /** Attempts with the usual retries, as events; the last is `ended`. */
  attempts$(batch: Batch, post?: PostBatch): Observable<AttemptEvent>;
  /** Requests open now. */
  inFlight(): number;
}

export const webhookSending = (o: SendingOptions): Sending => {
  const scheduler = o.scheduler ?? asyncScheduler;
  const limiter = makeLimiter(o.settings.maxInFlight);
  const gate = o.settings.maxRequestsPerSecond === undefined ? undefined : rateGate(o.settings.maxRequestsPerSecond);
  /** Waits for the rate cap's turn, when the webhook has one (first attempts, retries, probes, redrive and the operator's requests alike). */
  const turn$ = (): Observable<unknown> => {
    const wait = gate?.tryStart(scheduler.now()) ?? 0;
    return wait > 0 ? timer(wait, scheduler).pipe(mergeMap(turn$)) : of(0);
  };
  const once$ = (batch: Batch, post: PostBatch = o.post): Observable<Attempt> => {
    let started = 0;
    let sent = false;
    return limiter.run(
      defer(turn$).pipe(
        take(1),
        mergeMap(() => {
          const instead = o.instead?.();
          if (instead !== undefined) return of(instead);
          sent = true;
          started = scheduler.now();
          o.slots?.();
          return post(batch).pipe(map((answer) => classifyResponse(answer, scheduler.now())));
        }),
      ).pipe(
        catchError((err: unknown) => of(classifyError(err))),
        map((r): Attempt => ({ r, seconds: sent ? (scheduler.now() - started) / 1000 : 0, sent })),
        finalize(() => o.slots?.()),
      ),
    );
  };
  const attempts$ = (batch: Batch, post?: PostBatch): Observable<AttemptEvent> => {
    const from = (n: number): Observable<AttemptEvent> =>
      once$(batch, post).pipe(
        mergeMap((a): Observable<AttemptEvent> => {
          const { r } = a;
          const willRetry = !r.ok && r.retryable && n < o.settings.maxAttempts;
          const attempted = of<AttemptEvent>({ kind: 'attempted', attempt: n, a, willRetry });
          if (r.ok) return concat(attempted, of<AttemptEvent>({ kind: 'ended', end: { ok: true } }));
          if (willRetry) {
            return concat(
              attempted,
              of<AttemptEvent>({ kind: 'waiting' }),
              timer(r.retryAfterMs ?? o.backoff(n), scheduler).pipe(mergeMap(() => concat(of<AttemptEvent>({ kind: 'due' }), from(n + 1)))),
            );
          }
          const end: AttemptsEnd = {
            ok: false, retryable: r.retryable, error: r.retryable ? `${r.reason} after ${n} attempts` : r.reason,
            // an attempt not made (`instead`) is not counted
            attempts: a.sent ? n : n - 1, ...(r.gone ? { gone: true as const } : {}),
          };
          return concat(attempted, of<AttemptEvent>({ kind: 'ended', end }));
        }),
      );
    return from(1);
  };
  return { once$, attempts$, inFlight: () => limiter.active() };
};
