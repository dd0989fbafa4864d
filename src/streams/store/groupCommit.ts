import { Observable } from 'rxjs';

/**
 * Small writes that must land, each as soon as it can, in as few round trips as that allows (a group
 * commit): a write asked for while none is on its way goes at once; those asked for while one is on
 * its way go together in the next, as soon as it landed. Each caller's observable completes once the
 * write that carried its item landed. Like `persist`: a write that fails is tried again every
 * `retryMs` (with what was asked for meanwhile) until it lands; `failed` hears of every failure; an
 * item whose caller unsubscribed before it went is left out, and a write of which every caller
 * unsubscribed is not tried again (the stop deadline).
 *
 * Used for the marks of webhooks that have a batch (CONTRACT 4.3, `DeliveryState.markDone`): the
 * webhooks of one batch often answer close together, and their marks were one write each.
 */
export const groupCommit = <I>(retryMs: number, write: (items: readonly I[]) => Promise<unknown>, failed: (err: unknown) => void = () => undefined) => {
  type Waiter = { readonly item: I; readonly done: () => void; cancelled: boolean };
  let queued: Waiter[] = [];
  let busy = false;
  const next = (): void => {
    const group = queued.filter((w) => !w.cancelled);
    queued = [];
    if (group.length === 0) {
      busy = false;
      return;
    }
    busy = true;
    // a write that throws at once is a failed write too: never one that leaves the queue busy for ever
    new Promise((resolve) => resolve(write(group.map((w) => w.item)))).then(
      () => {
        for (const w of group) if (!w.cancelled) w.done();
        next();
      },
      (err: unknown) => {
        failed(err);
        // tried again with what was asked for meanwhile: one write still carries everything waiting
        setTimeout(() => {
          queued = [...group, ...queued];
          next();
        }, retryMs).unref();
      },
    );
  };
  return (item: I): Observable<void> =>
    new Observable<void>((subscriber) => {
      const w: Waiter = { item, cancelled: false, done: () => subscriber.complete() };
      queued.push(w);
      if (!busy) next();
      return () => {
        w.cancelled = true;
      };
    });
};
