import { Observable } from 'rxjs';

/**
 * At most `n` subscriptions of the observables it runs are open at once; the others wait in
 * the order they were subscribed. Unsubscribing a waiting one removes it from the queue.
 */
export const makeLimiter = (n: number) => {
  let active = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    active--;
    const next = waiting.shift();
    if (next) next();
  };
  const run = <A>(work$: Observable<A>): Observable<A> =>
    new Observable<A>((subscriber) => {
      let started = false;
      let done = false;
      let inner: { unsubscribe(): void } | undefined;
      const finish = () => {
        if (!done) {
          done = true;
          release();
        }
      };
      const start = () => {
        started = true;
        active++;
        inner = work$.subscribe({
          next: (v) => subscriber.next(v),
          error: (e) => {
            finish();
            subscriber.error(e);
          },
          complete: () => {
            finish();
            subscriber.complete();
          },
        });
      };
      if (active < n) start();
      else waiting.push(start);
      return () => {
        if (!started) {
          const i = waiting.indexOf(start);
          if (i >= 0) waiting.splice(i, 1);
        } else {
          inner?.unsubscribe();
          finish();
        }
      };
    });
  return { run, active: () => active, waiting: () => waiting.length };
};
