/**
 * CONTRACT 7.2: one replica's view of its callers' rate windows, and how each event changes it —
 * a pure transition (`arrive`, `counted`, `failed`). `rateWindow.ts` does the counting in Redis and
 * keeps the waiting requests; it asks this module what to do and tells it what happened.
 *
 * Invariants (each has a row in test/callers.rateState.test.ts):
 *  1. A window is one caller's whole Unix second: a request of a new second starts a new window.
 *  2. At most one count per caller and window is in flight: a request that arrives meanwhile
 *     waits, and the next count counts every waiting request together (one round trip for many).
 *  3. In a window, the request numbered k by Redis's totals passes when k ≤ N, and is refused else.
 *  4. A window known to be used up refuses its later requests here, without a count.
 *  5. A count of an older window answers only its own requests, and its waiting requests are
 *     counted in it; the requests of the new window have counts of their own. A window that is
 *     not the newest and has nothing left to answer is forgotten.
 *  6. Redis not reachable (before a count, or a count failing without Redis's answer): the
 *     requests go on. Redis refusing the count (an error reply: `NOPERM`, `WRONGTYPE`) is not
 *     "unreachable": those requests fail.
 */

export type RateVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number }
  | { readonly allowed: false; readonly failed: string };

export const ALLOWED: RateVerdict = { allowed: true };
/** Windows are one second long: the next one begins within a second, so `Retry-After` is always 1 (whole seconds, at least 1). */
export const REFUSED: RateVerdict = { allowed: false, retryAfterSeconds: 1 };

export interface RateWindowState {
  readonly second: number;
  /** Requests waiting for the next count. */
  readonly waiting: number;
  /** Requests in the count in flight (0: none in flight). */
  readonly counting: number;
  readonly usedUp: boolean;
}

/** Each caller's windows that are current or still have requests to answer. */
export type RateState = ReadonlyMap<string, readonly RateWindowState[]>;

/** What to do now: answer the request, or wait; and a count to start (`by` requests of window `second`). */
export interface RateStep {
  readonly state: RateState;
  /** undefined: the request waits for a count. */
  readonly verdict?: RateVerdict;
  readonly count?: { readonly second: number; readonly by: number };
}

const fresh = (second: number): RateWindowState => ({ second, waiting: 0, counting: 0, usedUp: false });
/** Nothing left to answer: no count in flight (a waiting request always has one, invariant 2). */
const idle = (w: RateWindowState): boolean => w.counting === 0;

/**
 * The caller's windows with `w` in place of its window of that second; windows older than the
 * newest that have nothing left to answer are dropped (invariant 1: only the newest is current).
 * The newest is always kept, so a caller once seen always has a window.
 */
const put = (state: RateState, caller: string, w: RateWindowState): RateState => {
  const others = (state.get(caller) ?? []).filter((o) => o.second !== w.second);
  const newest = Math.max(w.second, ...others.map((o) => o.second));
  return new Map(state).set(caller, [...others, w].filter((o) => o.second === newest || !idle(o)));
};

const windowOf = (state: RateState, caller: string, second: number): RateWindowState | undefined =>
  state.get(caller)?.find((w) => w.second === second);

/** A count to start when none of the window is in flight and requests wait (invariant 2). */
const startCount = (state: RateState, caller: string, w: RateWindowState): RateStep =>
  w.counting === 0 && w.waiting > 0
    ? { state: put(state, caller, { ...w, waiting: 0, counting: w.waiting }), count: { second: w.second, by: w.waiting } }
    : { state: put(state, caller, w) };

/** A request of `caller` arrives in Unix second `second`. */
export const arrive = (state: RateState, caller: string, second: number, connected: boolean): RateStep => {
  // invariant 1 (and 5: an older window's count answers its own requests only)
  const w = windowOf(state, caller, second) ?? fresh(second);
  if (w.usedUp) return { state: put(state, caller, w), verdict: REFUSED };
  if (!connected) return { state: put(state, caller, w), verdict: ALLOWED };
  return startCount(state, caller, { ...w, waiting: w.waiting + 1 });
};

type Answered = RateStep & { readonly verdicts: readonly RateVerdict[] };

/** The count of `by` requests of window `second` came back with the window's `total`: their verdicts, in arrival order. */
export const counted = (state: RateState, caller: string, second: number, by: number, total: number, limit: number): Answered => {
  // this count holds the requests numbered total − by + 1 … total of the window (invariant 3)
  const verdicts = Array.from({ length: by }, (_, i) => (total - by + i + 1 <= limit ? ALLOWED : REFUSED));
  const w = windowOf(state, caller, second) ?? fresh(second);
  return { ...startCount(state, caller, { ...w, counting: 0, usedUp: w.usedUp || total >= limit }), verdicts };
};

/** The count failed: Redis was not reached (`refusedBy` undefined), or it answered with an error (invariant 6). */
export const failed = (state: RateState, caller: string, second: number, by: number, refusedBy?: string): Answered => {
  const verdict: RateVerdict = refusedBy === undefined ? ALLOWED : { allowed: false, failed: refusedBy };
  const w = windowOf(state, caller, second) ?? fresh(second);
  return { ...startCount(state, caller, { ...w, counting: 0 }), verdicts: Array<RateVerdict>(by).fill(verdict) };
};
