import { webhookShown } from '../../config/webhookSettings';
import { safeUrl } from '../../config/urls';
import type { Metrics } from '../../telemetry/metrics';
import type { WeightedSeries } from '../../telemetry/weightedHistogram';
import type { BacklogReason } from './backlogEntry';
import type { AttemptResult } from './answers';
import type { LaneObserver, LaneStatus, WebhookState } from './lane';
import type { InterrogationCause } from './interrogation';
import type { WebhookSubscription } from './subscription';
import type { Logger } from 'pino';

/** One webhook as `GET /api/webhooks` shows it (CONTRACT 4.4): never a full URL, query, header or secret. */
export interface WebhookStatus {
  readonly index: number;
  readonly host: string;
  state: WebhookState;
  consecutiveFailures: number;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  lastError: string | null;
  inFlight: number;
  queued: number;
  backlog: number;
  /** CONTRACT 4.6: the interrogation running (`sent` counts points answered 2xx), the last completed here. */
  interrogation: { cause: InterrogationCause; startedAt: string; sent: number } | null;
  lastInterrogationAt: string | null;
  /**
   * CONTRACT 4.5, 4.6: the webhook's settings as configured — its filter, rate cap, whether it has
   * TLS settings, which auth, its interrogation settings (`webhookShown`); never a file's contents or a secret.
   */
  readonly [setting: string]: unknown;
}

/** A webhook's points left out by its format are logged at most this often (CONTRACT 4.7). */
const SKIPPED_LOG_MS = 60_000;

export const STATES: readonly WebhookState[] = ['healthy', 'retrying', 'open', 'redriving', 'disabled'];

/** The delivery status of every configured webhook, written by their lanes' observers. */
export const makeStatusBoard = (subscriptions: readonly WebhookSubscription[]): WebhookStatus[] =>
  subscriptions.map(({ index, host, webhook: w }) => ({
    index, host, state: 'healthy', consecutiveFailures: 0, lastSuccessAt: null, lastFailureAt: null,
    lastError: null, inFlight: 0, queued: 0, backlog: 0,
    ...webhookShown(w),
    interrogation: null,
    lastInterrogationAt: null,
  }));

/** A stream ID's time: the milliseconds before its `-`. */
const idMs = (id: string): number => {
  const dash = id.indexOf('-');
  return Number(dash < 0 ? id : id.slice(0, dash));
};

/**
 * CONTRACT 9: `webhook_delivery_lag_seconds`, one observation per delivered entry — its stream
 * ID's time to now (the 2xx). Entries of one batch mostly share a few milliseconds: each run of
 * equal ones is added at once, with its count.
 */
const observeLag = (h: WeightedSeries, ids: readonly string[], at: number): void => {
  for (const [ms, n] of runsOf(ids)) h.add(Math.max(0, (at - ms) / 1000), n);
};

/** A batch's entries as runs of one millisecond — worked out once per batch, shared by every webhook that gets it. */
const runs = new WeakMap<readonly string[], ReadonlyArray<readonly [number, number]>>();
const runsOf = (ids: readonly string[]): ReadonlyArray<readonly [number, number]> => {
  let r = runs.get(ids);
  if (r === undefined) {
    const out: Array<[number, number]> = [];
    for (const id of ids) {
      const ms = idMs(id);
      const last = out[out.length - 1];
      if (last !== undefined && last[0] === ms) last[1]++;
      else out.push([ms, 1]);
    }
    runs.set(ids, (r = out));
  }
  return r;
};

/** A redriven backlog entry: as many observations as points it held, each from its first entry's time (none for an interrogation's or a resend's request). */
const observeBacklogLag = (h: WeightedSeries, webhookId: string, points: number, at: number): void => {
  if (!/^[0-9]+-[0-9]+_/.test(webhookId) || points === 0) return;
  h.add(Math.max(0, (at - idMs(webhookId.split('_')[0] ?? '')) / 1000), points);
};

const resultLabel = (r: AttemptResult): string =>
  r.status !== undefined ? `${Math.floor(r.status / 100)}xx` : r.ok ? '2xx' : /timeout/.test(r.reason) ? 'timeout' : 'network';

const METRIC_REASON: Record<BacklogReason, string> = { exhausted: 'exhausted', overflow: 'overflow', circuit: 'circuit', refused: 'refused', disabled: 'disabled' };

/**
 * The observer of a subscription's lane: one log line per failed attempt, per batch that goes to
 * the backlog and per change of state; metrics labelled by index and host; the status board.
 */
export const laneObserver = (
  s: WebhookSubscription,
  deps: { log: Logger; metrics: Metrics; board: WebhookStatus[]; backlogSize: () => number; now?: () => Date },
): LaneObserver & { readonly backlogChanged: () => void } => {
  const { index, host } = s;
  const w = s.webhook;
  const labels = { webhook: String(index), host };
  const status = deps.board[index]!;
  const now = deps.now ?? (() => new Date());
  const { log, metrics } = deps;
  // labelled children looked up once, not hashed on every attempt (this runs per request)
  const stateGauges = STATES.map((st) => [st, metrics.webhookState.labels({ ...labels, state: st })] as const);
  const backlogGauge = metrics.backlogBatches.labels(labels);
  const latency = metrics.deliveryLatency.labels(labels);
  const lag = metrics.deliveryLag.labels(labels);
  const queueGauge = metrics.queueDepth.labels(labels);
  const attemptCounters = new Map<string, { inc(): void }>();
  const deliveryCounters = new Map<string, { inc(): void }>();
  const interrogationCounters = new Map<string, { inc(): void }>();
  const counter = (cache: Map<string, { inc(): void }>, make: (value: string) => { inc(): void }, value: string) => {
    let c = cache.get(value);
    if (c === undefined) cache.set(value, (c = make(value)));
    return c;
  };
  let lastSkippedLog: number | undefined;
  /** The gauges were set once (the board starts as healthy: the first state set is no change). */
  let gaugesSet = false;
  const setState = (s: LaneStatus) => {
    if (s.state !== status.state) {
      const level = s.state === 'open' || s.state === 'disabled' ? 'error' : s.state === 'healthy' ? 'info' : 'warn';
      log[level](
        { webhook: index, host, from: status.state, to: s.state, consecutiveFailures: s.consecutiveFailures, backlog: deps.backlogSize() },
        s.state === 'disabled'
          ? 'webhook disabled: it answered 410 Gone; its batches wait in its backlog until its configuration changes or a deadletter replay to it succeeds'
          : 'webhook state changed',
      );
    }
    const shownBefore = status.state;
    const backlogBefore = status.backlog;
    Object.assign(status, s, { backlog: deps.backlogSize() });
    // the gauges only when what they show changed: this runs for every request begun and ended, and
    // prom-client hashes a child's labels on every set
    if (s.state !== shownBefore || !gaugesSet) for (const [st, gauge] of stateGauges) gauge.set(st === s.state ? 1 : 0);
    if (status.backlog !== backlogBefore || !gaugesSet) backlogGauge.set(status.backlog);
    gaugesSet = true;
  };
  setState({ state: 'healthy', consecutiveFailures: 0, inFlight: 0, queued: 0 });
  /** The backlog's size as the backlog now knows it: after an append, and after each periodic scan. */
  const backlogChanged = () => {
    status.backlog = deps.backlogSize();
    backlogGauge.set(status.backlog);
  };
  return {
    backlogChanged,
    attempt: (r, n, seconds, willRetry) => {
      counter(attemptCounters, (result) => metrics.attempts.labels({ ...labels, result }), resultLabel(r)).inc();
      latency.observe(seconds);
      if (r.ok) {
        status.lastSuccessAt = now().toISOString();
        // the last attempt succeeded: no error stands (lastFailureAt still says when the last one failed)
        status.lastError = null;
      } else {
        status.lastFailureAt = now().toISOString();
        status.lastError = r.status !== undefined ? `HTTP ${r.status}` : r.reason;
        log.warn({ webhook: index, host, status: r.status, reason: r.reason, attempt: n, willRetry }, 'webhook attempt failed');
      }
    },
    finished: (batch, outcome, attempts, reason, backlogReason) => {
      if (outcome === 'skipped') return;
      counter(deliveryCounters, (o) => metrics.deliveries.labels({ ...labels, outcome: o }), outcome).inc();
      if (outcome === 'delivered') observeLag(lag, batch.ids, now().getTime());
      // CONTRACT 4.8: a live batch's points, once, when its 2xx came (nothing to send is no request)
      if (outcome === 'delivered' && attempts > 0 && batch.cause === undefined) metrics.pointsSent.inc(labels, batch.size);
      if (outcome === 'deadlettered') {
        backlogChanged();
        const kind = backlogReason ?? 'exhausted';
        metrics.deadLettered.inc({ ...labels, reason: METRIC_REASON[kind] });
        const line = { webhook: index, url: safeUrl(w.url), reason: kind, error: reason, attempts, webhookId: batch.webhookId, points: batch.size };
        // a batch queued behind an open circuit or older backlog, or for a disabled webhook, is expected, not an error
        if (kind === 'circuit' || (kind === 'disabled' && attempts === 0)) log.debug(line, 'batch added to the webhook backlog');
        else log.error(line, 'batch dead-lettered to the webhook backlog');
      }
    },
    queueDepth: (d) => {
      status.queued = d;
      queueGauge.set(d);
    },
    status: setState,
    interrogation: (e) => {
      switch (e.kind) {
        case 'started':
          status.interrogation = { cause: e.cause, startedAt: now().toISOString(), sent: 0 };
          log.info({ webhook: index, host, cause: e.cause }, 'interrogation started');
          break;
        case 'sent':
          if (status.interrogation !== null) status.interrogation.sent += e.points;
          break;
        case 'completed':
          log.info({ webhook: index, host, cause: e.cause, requests: e.requests, points: status.interrogation?.sent ?? 0 }, 'interrogation completed');
          status.interrogation = null;
          status.lastInterrogationAt = now().toISOString();
          counter(interrogationCounters, (cause) => metrics.interrogations.labels({ ...labels, cause }), e.cause).inc();
          break;
        case 'skipped':
          status.interrogation = null;
          break;
        case 'failed':
          log.warn({ webhook: index, host, cause: e.cause, err: e.error }, 'interrogation failed; it is begun again');
          status.interrogation = null;
          break;
      }
    },
    pointsSkipped: (count) => {
      metrics.pointsSkipped.inc({ ...labels, reason: 'unformattable' }, count);
      const t = now().getTime();
      // CONTRACT 4.7: at most once a minute per webhook
      if (lastSkippedLog !== undefined && t - lastSkippedLog < SKIPPED_LOG_MS) return;
      lastSkippedLog = t;
      log.warn({ webhook: index, host, reason: 'unformattable', points: count }, `points its format (${w.format?.type ?? 'datapoints'}) cannot write were left out of a batch (a value missing, null, an object or an array)`);
    },
    renderFailed: (batch, error) => {
      metrics.renderFailures.inc(labels);
      log.error({ webhook: index, host, webhookId: batch.webhookId, err: error }, 'a batch could not be rendered in the webhook\'s format; it goes to the backlog (refused) with the default body');
    },
    redriven: (webhookId, delivered, reason, batch) => {
      metrics.redriven.inc({ ...labels, outcome: delivered ? 'delivered' : 'failed' });
      // a backlog entry knows its first entry's ID, not each one's: every point it held counts from that
      if (delivered && batch !== undefined) observeBacklogLag(lag, webhookId, batch.size, now().getTime());
      if (delivered && batch !== undefined && batch.cause === undefined) metrics.pointsSent.inc(labels, batch.size);
      if (!delivered) log.warn({ webhook: index, host, webhookId, reason }, 'redrive of a backlog batch failed; it stays in the backlog');
    },
  };
};
