/**
 * A webhook's request rate cap (CONTRACT 4.5, `maxRequestsPerSecond`): when each request may
 * start. Pure apart from the times it is given.
 *
 * With a cap of r per second, n = max(1, ⌊r⌋) requests may start in any window of
 * w = max(1 s, n/r s): so never more than r start within any one second (a cap below 1 spaces them
 * 1/r s apart; a fractional part above 1 is not used within one second). Reservations are made in
 * the order requests ask and never move: a request reserved later never starts earlier.
 */
export interface RateGate {
  /** Reserves the next start for a request asking at `now`; returns how long it waits (ms). */
  reserve(now: number): number;
}

export const rateGate = (perSecond: number): RateGate => {
  const n = Math.max(1, Math.floor(perSecond));
  const windowMs = Math.max(1000, (n * 1000) / perSecond);
  /** The last n reserved starts, ascending. */
  const starts: number[] = [];
  return {
    reserve: (now) => {
      const at = starts.length < n ? Math.max(now, starts[starts.length - 1] ?? now) : Math.max(now, starts[0]! + windowMs);
      starts.push(at);
      if (starts.length > n) starts.shift();
      return at - now;
    },
  };
};
