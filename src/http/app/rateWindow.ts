import type { Redis } from 'ioredis';
import { rateWindowKey } from '../../mapping/keys';

/**
 * CONTRACT 7.2: `maxRequestsPerSecond`, counted per caller across every replica of the connector
 * `Id` in Redis, in fixed windows of one second aligned to whole Unix seconds. Each window is one
 * counter, `connectors:{ID}:rate:{caller}:{second}`, raised by a script that also gives it a short
 * life (the first raise of a window sets it), so no window outlives its use.
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
}

/** A window's counter lives this long after its first raise: its second, and one more for a late raise. */
const WINDOW_TTL_MS = 2000;

/** INCRBY, and a life for a new counter; one round trip, atomic. */
const RAISE = `local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if v == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v`;

const ALLOWED: RateVerdict = { allowed: true };

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
  const redis = d.redis as Redis & { restConnectorsRaise?: (key: string, by: number, ttlMs: number) => Promise<number> };
  if (redis.restConnectorsRaise === undefined) redis.defineCommand('restConnectorsRaise', { numberOfKeys: 1, lua: RAISE });
  const windows = new Map<string, Window>();

  const raise = (caller: string, w: Window, limit: number): void => {
    const batch = w.waiting;
    w.waiting = [];
    w.raising = true;
    redis.restConnectorsRaise!(rateWindowKey(d.connectorId, caller, w.second), batch.length, WINDOW_TTL_MS).then(
      (total) => {
        // this batch holds the requests numbered total - n + 1 … total of the window, in arrival order
        const first = Number(total) - batch.length;
        for (let i = 0; i < batch.length; i++) batch[i]!(first + i + 1 <= limit ? ALLOWED : refused(w.second));
        if (Number(total) >= limit) w.usedUp = true;
      },
      () => {
        for (const resolve of batch) resolve(ALLOWED);
      },
    ).finally(() => {
      w.raising = false;
      if (w.waiting.length > 0) raise(caller, w, limit);
    });
  };

  const refused = (second: number): RateVerdict => ({ allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(((second + 1) * 1000 - now()) / 1000)) });

  return (caller, limit) => {
    const second = Math.floor(now() / 1000);
    let w = windows.get(caller);
    if (w === undefined || w.second !== second) {
      // a window still raising keeps its own object until its raise comes back
      w = { second, waiting: [], raising: false, usedUp: false };
      windows.set(caller, w);
    }
    if (w.usedUp) return refused(second);
    if (!d.isConnected()) return ALLOWED;
    const win = w;
    return new Promise<RateVerdict>((resolve) => {
      win.waiting.push(resolve);
      if (!win.raising) raise(caller, win, limit);
    });
  };
};
