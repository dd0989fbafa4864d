import type { Redis } from 'ioredis';
import { rateWindowKey } from '../../mapping/keys';

/**
 * CONTRACT 7.2: `maxRequestsPerSecond`, counted per caller across every replica of the connector
 * `Id` in Redis, in fixed windows of one second aligned to whole Unix seconds. Each window is one
 * counter, `connectors:{ID}:rate:{caller}:{second}`, raised in one `MULTI` that first creates it
 * with a short life (`SET … PX NX`), so no window outlives its use. No script: the ACL user of the
 * README needs only `INCRBY` more, not `EVAL`.
 *
 * The request that raises the counter to N or below is let through; a later one is refused. Each
 * replica keeps at most one raise per caller in flight: requests that arrive meanwhile are counted
 * together by the next one (one round trip for many requests under load), and once a window is
 * known to be used up, its further requests are refused here without asking Redis.
 *
 * When Redis cannot be reached for the count the request goes on (CONTRACT 7.2): the endpoint
 * answers as it would (503 where it needs the data store).
 */

export type RateVerdict = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

export interface RateWindowDeps {
  readonly redis: Redis;
  readonly isConnected: () => boolean;
  readonly connectorId: string;
  /** The clock (ms since the epoch); the windows are its whole seconds. */
  readonly now?: () => number;
  /** Told when a count fails (its requests went on uncounted); at most once every WARN_EVERY_MS. */
  readonly countFailed?: (error: string) => void;
}

/** A failing count is reported at most this often (it fails for every request while it does). */
const WARN_EVERY_MS = 10_000;

/** A window's counter lives this long after its first raise: its second, and one more for a late raise. */
const WINDOW_TTL_MS = 2000;

const ALLOWED: RateVerdict = { allowed: true };
/** Windows are one second long: the next one begins within a second, so `Retry-After` is always 1 (whole seconds, at least 1). */
const REFUSED: RateVerdict = { allowed: false, retryAfterSeconds: 1 };

interface Window {
  readonly second: number;
  /** Requests waiting for the next raise. */
  waiting: Array<(v: RateVerdict) => void>;
  raising: boolean;
  usedUp: boolean;
}

export type RateWindow = (caller: string, limit: number) => RateVerdict | Promise<RateVerdict>;

export const makeRateWindow = (d: RateWindowDeps): RateWindow => {
  const now = d.now ?? Date.now;
  const windows = new Map<string, Window>();
  let warnedAt = -Infinity;
  /** A new window's counter with its life, then the raise; one round trip, atomic. */
  const count = async (key: string, by: number): Promise<number> => {
    const replies = await d.redis.multi().set(key, '0', 'PX', WINDOW_TTL_MS, 'NX').incrby(key, by).exec();
    // Stryker disable next-line all: exec() answers null only under WATCH, which is not used
    const [err, total] = replies?.[1] ?? [new Error('the count was discarded'), 0];
    // INCRBY refused inside the transaction (the key holds another type: a foreign writer's)
    if (err !== null) throw err;
    return Number(total);
  };

  const raise = (caller: string, w: Window, limit: number): void => {
    const batch = w.waiting;
    w.waiting = [];
    w.raising = true;
    count(rateWindowKey(d.connectorId, caller, w.second), batch.length).then(
      (total) => {
        // this batch holds the requests numbered total - n + 1 … total of the window, in arrival order
        const first = total - batch.length;
        for (let i = 0; i < batch.length; i++) batch[i]!(first + i + 1 <= limit ? ALLOWED : REFUSED);
        if (total >= limit) w.usedUp = true;
      },
      (err: unknown) => {
        for (const resolve of batch) resolve(ALLOWED);
        if (now() - warnedAt >= WARN_EVERY_MS) {
          warnedAt = now();
          d.countFailed?.(err instanceof Error ? err.message : String(err));
        }
      },
    ).finally(() => {
      w.raising = false;
      if (w.waiting.length > 0) raise(caller, w, limit);
    });
  };

  return (caller, limit) => {
    const second = Math.floor(now() / 1000);
    let w = windows.get(caller);
    if (w === undefined || w.second !== second) {
      // a window still raising keeps its own object until its raise comes back
      w = { second, waiting: [], raising: false, usedUp: false };
      windows.set(caller, w);
    }
    if (w.usedUp) return REFUSED;
    if (!d.isConnected()) return ALLOWED;
    const win = w;
    return new Promise<RateVerdict>((resolve) => {
      win.waiting.push(resolve);
      if (!win.raising) raise(caller, win, limit);
    });
  };
};
