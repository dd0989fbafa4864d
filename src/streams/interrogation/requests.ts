import type { Redis } from 'ioredis';
import { defer, map, Observable, type Observer } from 'rxjs';
import { safeUrl } from '../../config/urls';
import { interrogatedKey, interrogationLockKey, periodicKey, UPDATES_STREAM } from '../../mapping/keys';
import { interrogationRequest, type Interrogation, type InterrogationCause, type InterrogationEvent, type InterrogationRun } from '../webhook/interrogation';
import type { WebhookSubscription } from '../webhook/subscription';
import { storedContent } from '../webhook/body';
import type { ImageThread } from './thread';

/**
 * CONTRACT 4.6, the edge of interrogations: when each one is asked for (`initialState` at start,
 * `integrityPeriodSeconds`, `POST /api/webhooks/{index}/interrogation`), what Redis remembers of
 * them, and how a run reads the image. The lanes decide the order (invariant 10).
 */
export interface InterrogationDeps {
  readonly redis: Redis;
  /**
   * Starts what reads a run's image and sends its requests: a thread of its own with a connection of
   * its own (`imageThread.ts`), so that neither its SCANs and MGETs nor its requests queue behind, or
   * hold up, the live batches of every webhook (measured: with the shared connection the other
   * webhooks' p99 rose by half during a 1,000,000-point interrogation; see the thread for the rest).
   */
  readonly thread: (s: WebhookSubscription, cause: InterrogationCause, p: string) => ImageThread;
  /** Asks for a full collection of this thread's heap (`collector.ts`). */
  readonly collect?: (() => void) | undefined;
  readonly connectorId: string;
  /** This replica's consumer name: what it writes into the keys it holds. */
  readonly consumer: string;
  /** Told of a Redis failure of a timer (it is tried again after `retryMs`). */
  readonly onError: (what: string, err: Error) => void;
  readonly retryMs: number;
  readonly now?: () => number;
}

/**
 * A run's requests between two full collections of the main thread's heap. Measured for 1,000,000
 * points under load (bench `interrogation-1m`): every 50 requests, the other webhooks' p99 1.20–1.21×
 * a run without the interrogation (each collection's last step holds their batches up); every 150,
 * 1.10–1.16× in three runs, and the connector's peak RSS growth beyond the load's 26–35 MB instead of 28–32.
 */
const COLLECT_EVERY_REQUESTS = 150;
/** How long the initial interrogation's lock lives without renewal (it is renewed every third of it). */
export const LOCK_MS = 30_000;
/** How often a replica waiting for another's initial interrogation looks again. */
const WAIT_MS = 500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The ID of the newest entry of process:updates, `0-0` for an empty or missing stream: the run's `P`. */
const newestId = async (redis: Redis): Promise<string> => {
  const [newest] = (await redis.xrevrange(UPDATES_STREAM, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  return newest?.[0] ?? '0-0';
};

/** Deletes a key only when this replica holds it. */
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/** Sets a key's time to live only when this replica holds it. */
const RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

interface Hooks {
  /** Before reading: 'skip' when there is nothing to do. */
  readonly before?: () => Promise<'go' | 'skip'>;
  /** After every request ended. */
  readonly after?: (p: string) => Promise<void>;
  /** Cut short or failed. */
  readonly cancelled?: () => void;
}

/**
 * An interrogation of `s` whose runs read the image as it is when each begins: `P` is read here
 * (on the main connection), the image and the requests on the run's thread, started once the run
 * is known to have work and ended when it completes or is cut short.
 */
const imageInterrogation = (d: InterrogationDeps, threads: Set<ImageThread>, s: WebhookSubscription, cause: InterrogationCause, hooks: Hooks = {}): Interrogation => ({
  cause,
  begin: (): InterrogationRun => {
    let thread: ImageThread | undefined;
    let p = '0-0';
    let k = 0;
    let skipped = false;
    let cancelled = false;
    const end = () => {
      if (thread === undefined) return;
      thread.close();
      threads.delete(thread);
    };
    return {
      next: () =>
        defer(async () => {
          if (thread === undefined) {
            if (hooks.before !== undefined && (await hooks.before()) === 'skip') {
              skipped = true;
              return null;
            }
            if (cancelled) return null;
            p = await newestId(d.redis);
            if (cancelled) return null;
            thread = d.thread(s, cause, p);
            threads.add(thread);
          }
          const next = await thread.next();
          if (next === null) return null;
          // this thread's garbage goes now, not into the peak (measured for 1,000,000 points under
          // load: peak RSS growth beyond the load's 28 MB with a collection every 50 requests, 45 MB without any)
          if (++k % COLLECT_EVERY_REQUESTS === 0) d.collect?.();
          // the body stays on the thread: see `RunSender`
          return interrogationRequest(cause, p, k, next.size, next);
        }),
      // requests exist only once the thread does
      sender: {
        post: (batch) => defer(() => thread!.post(batch)),
        withBody: (batch) => defer(() => thread!.take(batch.webhookId)).pipe(map((t) => ({ ...batch, content: storedContent(t.body, t.contentType) }))),
      },
      completed: () =>
        defer(async () => {
          end();
          return skipped ? undefined : hooks.after?.(p);
        }),
      cancel: () => {
        cancelled = true;
        end();
        hooks.cancelled?.();
      },
      skipped: () => skipped,
    };
  },
});

/** A queue of interrogations for one lane: what is asked before the lane listens waits for it. */
const mailbox = () => {
  const waiting: Interrogation[] = [];
  let listener: Observer<Interrogation> | undefined;
  return {
    post: (g: Interrogation) => (listener !== undefined ? listener.next(g) : waiting.push(g)),
    asks: new Observable<Interrogation>((sub) => {
      for (const g of waiting.splice(0)) sub.next(g);
      listener = sub;
      return () => {
        if (listener === sub) listener = undefined;
      };
    }),
  };
};

export interface Interrogations {
  /** The initial interrogation of a webhook with `initialState`, for its lane to begin with. */
  initial(s: WebhookSubscription): Interrogation | undefined;
  /** The interrogations asked of a webhook later (periodic ones, requested ones). */
  asks(s: WebhookSubscription): Observable<Interrogation>;
  /** `POST /api/webhooks/{index}/interrogation`: queued, or refused while one is queued or running. */
  request(index: number): 'queued' | 'not_found' | 'busy';
  /** What the lane said of an interrogation of webhook `index` (a queued or running one ended, or not). */
  event(index: number, e: InterrogationEvent): void;
  /** Starts the integrity periods' timers (replicas agree in Redis on who performs each). */
  start(): void;
  /** Stops the timers: nothing more is asked for. */
  stop(): void;
  /** Ends the threads of runs still under way (after the lanes stopped). */
  close(): Promise<void>;
}

export const makeInterrogations = (d: InterrogationDeps, subscriptions: readonly WebhookSubscription[]): Interrogations => {
  const boxes = subscriptions.map(() => mailbox());
  /** The threads of runs under way. */
  const threads = new Set<ImageThread>();
  const interrogationOf = (s: WebhookSubscription, cause: InterrogationCause, hooks?: Hooks) => imageInterrogation(d, threads, s, cause, hooks);
  /** Interrogations of each webhook asked for and not yet ended (completed or skipped). */
  const busy = subscriptions.map(() => 0);
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const later = (ms: number, fn: () => void) => {
    if (stopped) return;
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  /** Renews a key this replica holds every third of `ms`, until the returned function is called. */
  const renewing = (key: string, ms: number): (() => void) => {
    const t = setInterval(() => void d.redis.eval(RENEW, 1, key, d.consumer, String(ms)).catch((err: Error) => d.onError('renewing an interrogation key', err)), Math.max(1000, ms / 3));
    return () => clearInterval(t);
  };

  const initialOf = (s: WebhookSubscription): Interrogation => {
    const field = safeUrl(s.webhook.url);
    const lock = interrogationLockKey(d.connectorId, s.index);
    let stopRenew: (() => void) | undefined;
    const release = () => {
      stopRenew?.();
      stopRenew = undefined;
      void d.redis.eval(RELEASE, 1, lock, d.consumer).catch(() => undefined);
    };
    return interrogationOf(s, 'interrogation', {
      // once per URL and connector Id: done already (here, before a restart, or by a replica), or
      // under way on a replica (wait for it: its image goes first), or ours to do
      before: async () => {
        for (;;) {
          if ((await d.redis.hexists(interrogatedKey(d.connectorId), field)) === 1) return 'skip';
          if ((await d.redis.set(lock, d.consumer, 'PX', LOCK_MS, 'NX')) === 'OK') {
            stopRenew = renewing(lock, LOCK_MS);
            return 'go';
          }
          if (stopped) return 'skip';
          await sleep(WAIT_MS);
        }
      },
      after: async (p) => {
        await d.redis.hset(interrogatedKey(d.connectorId), field, p);
        release();
      },
      cancelled: release,
    });
  };

  const periodicOf = (s: WebhookSubscription, periodMs: number): Interrogation => {
    const key = periodicKey(d.connectorId, s.index);
    let stopRenew: (() => void) | undefined;
    return interrogationOf(s, 'periodic', {
      before: async () => {
        stopRenew ??= renewing(key, periodMs);
        return 'go';
      },
      // the next one is due one period after this one ended, on whichever replica claims it first
      after: async () => {
        stopRenew?.();
        stopRenew = undefined;
        await d.redis.set(key, d.consumer, 'PX', periodMs);
        later(periodMs, () => due(s, periodMs));
      },
      cancelled: () => {
        stopRenew?.();
        stopRenew = undefined;
      },
    });
  };

  /** A period is up: this replica performs it if it claims the key, else looks again when the key expires. */
  const due = (s: WebhookSubscription, periodMs: number): void => {
    if (stopped) return;
    const key = periodicKey(d.connectorId, s.index);
    void (async () => {
      if ((await d.redis.set(key, d.consumer, 'PX', periodMs, 'NX')) === 'OK') {
        busy[s.index]!++;
        boxes[s.index]!.post(periodicOf(s, periodMs));
        return;
      }
      const ttl = await d.redis.pttl(key);
      later(ttl > 0 ? ttl + 50 : periodMs, () => due(s, periodMs));
    })().catch((err: Error) => {
      d.onError('claiming a periodic interrogation', err);
      later(d.retryMs, () => due(s, periodMs));
    });
  };

  return {
    initial: (s) => {
      if (s.webhook.initialState !== true) return undefined;
      busy[s.index]!++;
      return initialOf(s);
    },
    asks: (s) => boxes[s.index]!.asks,
    request: (index) => {
      const s = subscriptions[index];
      if (s === undefined) return 'not_found';
      if (busy[index]! > 0) return 'busy';
      busy[index]!++;
      boxes[index]!.post(interrogationOf(s, 'interrogation'));
      return 'queued';
    },
    event: (index, e) => {
      if (e.kind === 'completed' || e.kind === 'skipped') busy[index] = Math.max(0, busy[index]! - 1);
    },
    start: () => {
      for (const s of subscriptions) {
        const seconds = s.webhook.integrityPeriodSeconds;
        if (seconds !== undefined) later(seconds * 1000, () => due(s, seconds * 1000));
      }
    },
    stop: () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
    close: async () => {
      for (const t of threads) t.close();
      threads.clear();
    },
  };
};
