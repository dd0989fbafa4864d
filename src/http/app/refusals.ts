import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../../telemetry/metrics';
import { sendProblem } from './problem';

/** Why a request was refused by the callers setting (CONTRACT 7.2). */
export type RefusalReason = 'forbidden' | 'rate_limited';

/** How a request that names no caller is shown in the metric and the log (a name is never empty). */
export const NO_CALLER = '-';

/** Lines are logged at most this often per caller and reason. */
const LOG_EVERY_MS = 1000;
/** Callers remembered for the throttle; beyond it, the oldest lines' entries are dropped. */
const REMEMBERED = 1000;

/**
 * CONTRACT 7.2: a 403 or 429 answer, counted in `http_requests_refused_total{caller,reason}` and
 * logged at warn level with `caller` and `reason` at most once a second per caller and reason (the
 * line says how many were refused since the last one), so a caller in a loop cannot flood the log.
 */
export const makeRefusals = (log: Logger, metrics: Metrics, now: () => number = Date.now) => {
  const lastLogged = new Map<string, { at: number; since: number }>();
  return (res: ServerResponse, caller: string | undefined, reason: RefusalReason, detail: string, headers: Record<string, string> = {}): void => {
    const name = caller ?? NO_CALLER;
    metrics.refused.inc({ caller: name, reason });
    const key = `${reason}\0${name}`;
    const t = now();
    const seen = lastLogged.get(key);
    if (seen === undefined || t - seen.at >= LOG_EVERY_MS) {
      log.warn({ caller: name, reason, detail, ...(seen !== undefined && seen.since > 0 ? { refusedSinceLastLine: seen.since } : {}) }, 'request refused');
      lastLogged.delete(key);
      if (lastLogged.size >= REMEMBERED) lastLogged.delete(lastLogged.keys().next().value!);
      lastLogged.set(key, { at: t, since: 0 });
    } else seen.since++;
    sendProblem(res, reason === 'forbidden' ? 403 : 429, detail, headers);
  };
};

export type Refuse = ReturnType<typeof makeRefusals>;
