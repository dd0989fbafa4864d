import { ReplyError, type Redis } from 'ioredis';
import { rateWindowKey } from '../../mapping/keys';
import { arrive, counted, failed, type RateState, type RateStep, type RateVerdict } from './rateState';

export type { RateVerdict } from './rateState';

/**
 * CONTRACT 7.2: `maxRequestsPerSecond`, counted per caller across every replica of the connector
 * `Id` in Redis, in fixed windows of one second aligned to whole Unix seconds. Each window is one
 * counter, `connectors:{ID}:rate:{caller}:{second}`, raised in one `MULTI` that first creates it
 * with a short life (`SET … PX NX`), so no window outlives its use. No script: the ACL user of the
 * README needs only `INCRBY` more, not `EVAL`.
 *
 * What to answer, and when to count, is decided by the pure state of `rateState.ts` (its
 * invariants say it); this shell counts in Redis and keeps the requests waiting for a count.
 *
 * When Redis cannot be reached for the count the request goes on (CONTRACT 7.2): the endpoint
 * answers as it would (503 where it needs the data store). When Redis refuses the count (an error
 * reply), the request fails: a limit is never dropped without a word.
 */

export interface RateWindowDeps {
  readonly redis: Redis;
  readonly isConnected: () => boolean;
  readonly connectorId: string;
  /** The clock (ms since the epoch); the windows are its whole seconds. */
  readonly now?: () => number;
  /** Told when a count fails (its requests went on uncounted, or failed); at most once every WARN_EVERY_MS. */
  readonly countFailed?: (error: string) => void;
}

/** A failing count is reported at most this often (it fails for every request while it does). */
const WARN_EVERY_MS = 10_000;

/** A window's counter lives this long after its first raise: its second, and one more for a late raise. */
const WINDOW_TTL_MS = 2000;

export type RateWindow = (caller: string, limit: number) => RateVerdict | Promise<RateVerdict>;

type Refused = Error & { readonly command?: { readonly name?: string }; readonly previousErrors?: ReadonlyArray<Error & { readonly command?: { readonly name?: string } }> };

/**
 * CONTRACT 7.2: at start, when a caller has a rate, a count of nothing (`INCRBY 0` on a window no
 * caller has) run as every count is; the commands Redis's ACL refused, named from the replies
 * (their commands, not their text), or undefined when it may. An error that is no reply of
 * Redis's (the connection) is thrown: the caller tries again.
 */
export const refusedRateCommands = async (redis: Redis, connectorId: string): Promise<string | undefined> => {
  const key = rateWindowKey(connectorId, '', 0);
  try {
    await redis.multi().set(key, '0', 'PX', WINDOW_TTL_MS, 'NX').incrby(key, 0).exec();
    return undefined;
  } catch (err) {
    if (!(err instanceof ReplyError)) throw err;
    const e = err as Refused;
    const queued = (e.previousErrors ?? []).filter((p) => p.message.startsWith('NOPERM'));
    const refused = queued.length > 0 ? queued : [e];
    return refused.map((p) => `${p.command?.name ?? 'exec'} (${p.message})`).join(', ');
  }
};

export const makeRateWindow = (d: RateWindowDeps): RateWindow => {
  const now = d.now ?? Date.now;
  let state: RateState = new Map();
  /** The requests waiting for a count, by caller and window: answered in arrival order. */
  const waiting = new Map<string, Array<(v: RateVerdict) => void>>();
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
  const warn = (err: unknown) => {
    if (now() - warnedAt < WARN_EVERY_MS) return;
    warnedAt = now();
    d.countFailed?.(err instanceof Error ? err.message : String(err));
  };

  const run = (caller: string, step: RateStep, limit: number): void => {
    state = step.state;
    const c = step.count;
    if (c === undefined) return;
    const slot = `${c.second}:${caller}`;
    const batch = (waiting.get(slot) ?? []).splice(0, c.by);
    const answer = (next: RateStep & { readonly verdicts: readonly RateVerdict[] }) => {
      next.verdicts.forEach((v, i) => batch[i]!(v));
      if (waiting.get(slot)?.length === 0) waiting.delete(slot);
      run(caller, next, limit);
    };
    count(rateWindowKey(d.connectorId, caller, c.second), c.by).then(
      (total) => answer(counted(state, caller, c.second, c.by, total, limit)),
      (err: unknown) => {
        warn(err);
        // invariant 6: Redis answered with an error (NOPERM, WRONGTYPE) is not "unreachable"
        answer(failed(state, caller, c.second, c.by, err instanceof ReplyError ? (err as Error).message : undefined));
      },
    );
  };

  return (caller, limit) => {
    const second = Math.floor(now() / 1000);
    const step = arrive(state, caller, second, d.isConnected());
    if (step.verdict !== undefined) {
      state = step.state;
      return step.verdict;
    }
    const slot = `${second}:${caller}`;
    return new Promise<RateVerdict>((resolve) => {
      const list = waiting.get(slot);
      if (list === undefined) waiting.set(slot, [resolve]);
      else list.push(resolve);
      run(caller, step, limit);
    });
  };
};
