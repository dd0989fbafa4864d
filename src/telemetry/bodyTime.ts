import { performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

/**
 * The time spent making webhook request bodies (CONTRACT 4.7), by kind of work: each format's
 * rendering and gzip on the main thread — synchronous work: the event loop is held meanwhile, so
 * this is the thread's time, which a process-wide CPU clock would overstate (V8's concurrent
 * collector runs on other threads at the same time) — and a JSONata evaluation's time as its
 * evaluation process measured it (`jsonataProcess.ts`). `webhook_body_seconds_total{work}` exports it,
 * so that an operator sees what a JSONata expression or compression costs, and `npm run bench`
 * (push-formats) sees what a format adds where it is spent rather than as a small difference of two
 * noisy process totals. Counted on the main thread only: the interrogation thread's bodies are
 * its own and not exported.
 */
export type BodyWork = 'datapoints' | 'ndjson' | 'influx-line' | 'jsonata' | 'gzip';
export const BODY_WORKS: readonly BodyWork[] = ['datapoints', 'ndjson', 'influx-line', 'jsonata', 'gzip'];

const spent: Record<BodyWork, number> = { datapoints: 0, ndjson: 0, 'influx-line': 0, jsonata: 0, gzip: 0 };

/** The monotonic clock, in µs. */
export const clockMicros = (): number => performance.now() * 1000;

/** Adds `micros` to `work` (nothing on another thread). */
export const addBodyTime = (work: BodyWork, micros: number): void => {
  if (isMainThread && micros > 0) spent[work] += micros;
};

/** `f()`, its time counted for `work`. */
export const timedBody = <T>(work: BodyWork, f: () => T): T => {
  const t0 = clockMicros();
  try {
    return f();
  } finally {
    addBodyTime(work, clockMicros() - t0);
  }
};

/** µs spent so far on each kind of work (a copy). */
export const bodyTimeSpent = (): Readonly<Record<BodyWork, number>> => ({ ...spent });
