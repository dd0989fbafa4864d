import { defer, type Observable, retry, timer } from 'rxjs';

/**
 * A write that must land (a backlog entry, a delivery record, an acknowledgement): retried every
 * `retryMs` while it fails — the data store away, a failover, Redis out of memory — until it lands
 * or is unsubscribed (the stop deadline). `failed` hears of every failure; the write itself never
 * errors, so what waits on it (an acknowledgement) waits too.
 */
export const persist = <A>(retryMs: number, write: () => Promise<A>, failed: (err: unknown) => void = () => undefined): Observable<A> =>
  defer(write).pipe(
    retry({
      delay: (err: unknown) => {
        failed(err);
        return timer(retryMs);
      },
    }),
  );
