/**
 * A webhook's request rate cap (CONTRACT 4.5, `maxRequestsPerSecond`): whether a request may start
 * now, and if not, how long to wait before asking again. Pure apart from the times it is given.
 *
 * With a cap of r per second, n = max(1, ⌊r⌋) requests may start in any window of
 * w = max(1 s, n/r s): so never more than r start within any one second (a cap below 1 spaces them
 * 1/r s apart; a fractional part above 1 is not used within one second). The gate records the
 * times requests really start — a request whose timer fires late counts from when it went — so the
 * spacing holds between the requests as sent, not as planned.
 */
export interface RateGate {
  /** 0: start now (recorded as started at `now`); otherwise how long to wait (ms) before asking again. */
  tryStart(now: number): number;
}

export const rateGate = (perSecond: number): RateGate => {
  const n = Math.max(1, Math.floor(perSecond));
  const windowMs = Math.max(1000, (n * 1000) / perSecond);
  /** The last n starts, ascending. */
  const starts: number[] = [];
  return {
    tryStart: (now) => {
      if (starts.length === n) {
        const wait = starts[0]! + windowMs - now;
        if (wait > 0) return wait;
        starts.shift();
      }
      starts.push(now);
      return 0;
    },
  };
};
