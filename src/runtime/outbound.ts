import { defer, EMPTY, exhaustMap, from, interval, merge, mergeMap, type Observable, catchError, concat, tap, ignoreElements } from 'rxjs';
import type { Webhook } from '../config/managed';
import { urlHost } from '../config/urls';
import { outboundRoutes, webhooksRoute } from '../http/outbound';
import { outboundOpenApi } from '../http/openapi/outbound';
import { incrementalCollector } from './collector';
import { redisBacklog } from '../streams/backlog';
import { webhookLane, exponentialBackoff, QUEUE_CAP } from '../streams/deliver';
import { readGroupHealth } from '../streams/groupHealth';
import { makeLossTracker } from '../streams/lossTracker';
import { pushPipeline$ } from '../streams/pipeline';
import { readUpdates$ } from '../streams/reader';
import { redisDeliveryState } from '../streams/deliveryState';
import { groupName } from '../mapping/keys';
import { redisStreamPort } from '../streams/redisPort';
import { axiosPostBatch } from '../streams/webhookClient';
import { VERSION } from '../version';
import { isOutOfMemory } from '../datastoreErrors';
import type { Metrics } from '../http/metrics';
import type { Background, ConnectorContext, ConnectorParts } from './connector';
import type { Logger } from './logger';
import { connectDatastore } from './datastore';
import { laneObserver, makeStatusBoard, type WebhookStatus } from './webhookStatus';

/** A webhook as logs and metric labels show it: index and host, never the full URL or headers. */
export const webhookHost = (w: Webhook): string => urlHost(w.url);

const LOSS_CHECK_MS = 5000;
/** CONTRACT 6.6: a write that keeps failing is logged at most this often per kind and cause. */
const WRITE_FAILURE_LOG_MS = 60_000;

/**
 * The push side's writes that must land (delivery records, backlog entries, acknowledgements) are
 * retried until they do, and what waits on them stays pending meanwhile: this says why, at most
 * once a minute per kind of write and cause, and counts every refusal for want of memory.
 */
export const writeFailureLog = (log: Logger, metrics: Metrics, now: () => number = Date.now) => {
  const last = new Map<string, number>();
  return (write: string, err: unknown): void => {
    const message = err instanceof Error ? err.message : String(err);
    const oom = isOutOfMemory(message);
    if (oom) metrics.outOfMemory.inc({ write: write.replace(/ \(.*\)$/, '').replace(/ /g, '_') });
    const key = `${write} ${oom ? 'oom' : 'other'}`;
    const t = now();
    const previous = last.get(key);
    if (previous !== undefined && t - previous < WRITE_FAILURE_LOG_MS) return;
    last.set(key, t);
    if (oom) log.error({ write, err: message }, `the data store is out of memory: cannot write the ${write}; nothing is acknowledged meanwhile, and the write is retried until Redis takes it`);
    else log.warn({ write, err: message }, `cannot write the ${write}; its entries stay pending (never acknowledged) and the write is retried`);
  };
};

const startPush = (ctx: ConnectorContext, board: WebhookStatus[]): Background => {
  const { startup, settings, metrics } = ctx;
  const log = ctx.log.child({ component: 'push' });
  const retryMs = Math.round(startup.datastore.connectionRetrySeconds * 1000);
  const group = groupName(startup.id);
  const reader = connectDatastore(ctx.redisOptions, startup.datastore.connectionRetrySeconds, log, 'stream-reader');
  const writeFailed = writeFailureLog(log, metrics);
  const state = redisDeliveryState(ctx.datastore.client, startup.id, group, retryMs, writeFailed);
  const port = redisStreamPort(reader.client, startup.id, startup.datastore.consumerName, state);
  const http = axiosPostBatch(startup.webhooks.timeoutMilliseconds, `rest-connectors/${VERSION}`);
  const redis = ctx.datastore.client;
  let stopping = false;
  /** Entries read and not yet acknowledged (bounded by the lanes' queues). */
  const inFlight = new Set<string>();

  const tracker = makeLossTracker();
  const checkLoss$: Observable<never> = defer(() => readGroupHealth(redis, group)).pipe(
    tap((h) => {
      if (h === null) return;
      metrics.groupPending.set(h.pending);
      metrics.streamLength.set(h.length);
      if (h.lag !== null) metrics.groupLag.set(h.lag);
      const r = tracker(h);
      if (r.newlyLost === null) log.error({ group }, 'entries of process:updates were trimmed before this connector read them (Redis cannot tell how many)');
      else if (r.newlyLost > 0) {
        metrics.entriesLost.inc(r.newlyLost);
        log.error({ group, lost: r.newlyLost }, 'entries of process:updates were trimmed before this connector read them');
      }
      if (r.lagWarning) log.warn({ group, lag: h.lag, length: h.length }, 'consumer group lag is over half of the stream length; entries may be trimmed before they are read');
    }),
    ignoreElements(),
    catchError((err: Error) => {
      log.debug({ err: err.message }, 'stream health check failed');
      return EMPTY;
    }),
  );

  const backlogs = settings.webhooks.map((w, index) =>
    redisBacklog({
      redis, connectorId: startup.id, consumer: startup.datastore.consumerName, index, url: w.url,
      maxLength: startup.webhooks.deadLetterMaxLength, retryMs,
      leaseMs: Math.max(10_000, Math.round(startup.webhooks.probeIntervalSeconds * 3000)),
      onWriteError: (err) => writeFailed('backlog', err),
      onDropped: (item) => {
        metrics.deadLetterDropped.inc({ webhook: String(index), host: webhookHost(w) });
        log.error({ webhook: index, host: webhookHost(w), webhookId: item.webhookId, deadLetterId: item.id }, 'a backlog batch was trimmed by Webhooks:DeadLetterMaxLength before it was delivered');
      },
    }),
  );

  const observers = settings.webhooks.map((webhook, index) =>
    laneObserver(index, webhook, { log, metrics, board, backlogSize: () => backlogs[index]!.size() }),
  );
  /**
   * Every backlog read again beside the loss check (CONTRACT 4.4): what other replicas added, what
   * a previous run left, and what the cap trimmed (counted and logged as dropped, whatever the
   * entry's reason) show whether or not the lane redrives.
   */
  const scanBacklogs$: Observable<never> = from(backlogs.map((b, i) => [b, i] as const)).pipe(
    mergeMap(([b, i]) =>
      b.pending().pipe(
        tap(() => observers[i]!.backlogChanged()),
        catchError((err: Error) => {
          log.debug({ webhook: i, err: err.message }, 'reading the webhook backlog failed');
          return EMPTY;
        }),
      ),
    ),
    ignoreElements(),
  );

  const entries$ = from(reader.ready()).pipe(
    mergeMap(() => concat(checkLoss$, readUpdates$(port, {
      startFromLatest: startup.datastore.startFromLatest,
      count: Math.min(startup.webhooks.batchMaxSize, 10000),
      blockMs: startup.datastore.streamPollIntervalMilliseconds,
      retryMs,
      claimIdleMs: startup.datastore.claimIdleMilliseconds,
      claimEveryMs: startup.datastore.claimIntervalMilliseconds,
      isStopping: () => stopping,
      isInFlight: (id) => inFlight.has(id),
      // XREADGROUP is a write to Redis (it moves the group): refused while Redis is out of memory
      onError: (err) =>
        isOutOfMemory((err as Error).message)
          ? writeFailed('consumer group (XREADGROUP)', err)
          : log.warn({ err: (err as Error).message, retryInSeconds: startup.datastore.connectionRetrySeconds }, 'reading process:updates failed; retrying'),
      onClaim: (from, into, count, idleMs) => log.warn({ group, from, into, count, idleSeconds: Math.round(idleMs / 1000) }, 'claimed the pending entries of a consumer that stopped reading'),
    }))),
    tap((chunk) => {
      if (!chunk.replay) metrics.entriesRead.inc(chunk.entries.length);
      for (const e of chunk.entries) inFlight.add(e.id);
    }),
  );

  const pipeline$ = defer(() => ctx.datastore.ready()).pipe(
    mergeMap(() => entries$),
    pushPipeline$({
      webhooks: settings.webhooks,
      windowMs: startup.webhooks.batchWindowMilliseconds,
      maxSize: startup.webhooks.batchMaxSize,
      lane: (index, webhook, key) =>
        webhookLane({
          index,
          webhook,
          key,
          post: http.post,
          maxAttempts: startup.webhooks.maxAttempts,
          maxInFlight: startup.webhooks.maxInFlight,
          queueCap: QUEUE_CAP,
          backoff: exponentialBackoff(),
          backlog: backlogs[index]!,
          circuitThreshold: startup.webhooks.circuitFailureThreshold,
          probeIntervalMs: Math.round(startup.webhooks.probeIntervalSeconds * 1000),
          autoRedrive: startup.webhooks.autoRedrive,
          observer: observers[index]!,
        }),
      state: {
        record: state.record,
        markDone: state.markDone,
        ack: (first, ids, keys) => state.ack(first, ids, keys).pipe(tap(() => ids.forEach((id) => inFlight.delete(id)))),
      },
      onUndecodable: (id, reason) => {
        metrics.entriesUndeliverable.inc();
        log.warn({ id, reason }, 'stream entry skipped and acknowledged');
      },
      onBatch: (b) => metrics.batchSize.observe(b.size),
    }),
  );

  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  let fail!: (reason: string) => void;
  const failed = new Promise<string>((resolve) => (fail = resolve));
  // The one subscription of the push side; its errors cannot end delivery silently.
  const subscription = pipeline$.subscribe({
    error: (err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      log.fatal({ err: reason }, 'push pipeline failed; stopping, so that the orchestrator restarts the connector');
      finished();
      fail(`push pipeline failed: ${reason}`);
    },
    complete: () => {
      finished();
      // the pipeline only completes by itself when stopping; any other end is a failure
      if (!stopping) fail('push pipeline ended unexpectedly');
    },
  });
  // the backlogs once at the start too, without holding up the stream's reading
  const monitor = merge(scanBacklogs$, interval(LOSS_CHECK_MS).pipe(exhaustMap(() => merge(checkLoss$, scanBacklogs$)))).subscribe();
  log.info({ group, consumer: startup.datastore.consumerName, webhooks: settings.webhooks.length }, 'push pipeline started');

  return {
    failed,
    stop: async (deadline) => {
      stopping = true;
      monitor.unsubscribe();
      let timer: NodeJS.Timeout | undefined;
      // CONTRACT 4.3: at most StopTimeoutMilliseconds, within the connector's whole stop.
      const waitMs = Math.max(0, Math.min(deadline, Date.now() + startup.webhooks.stopTimeoutMilliseconds) - Date.now());
      const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), waitMs)));
      const how = await Promise.race([done, timeout]);
      clearTimeout(timer);
      if (how === 'timeout') {
        log.warn(
          { pending: inFlight.size, waitedMs: waitMs },
          'in-flight deliveries did not finish in time; their entries stay pending, and after the restart only the webhooks that did not finish them get them again',
        );
      }
      subscription.unsubscribe();
      http.close();
      await reader.close();
    },
  };
};

export const buildOutbound = (ctx: ConnectorContext): ConnectorParts => {
  const board = makeStatusBoard(ctx.settings.webhooks);
  return {
    dataRoutes: [
      ...outboundRoutes({
        redis: ctx.datastore.client,
        isConnected: ctx.datastore.isConnected,
        log: ctx.log.child({ component: 'pull' }),
        metrics: ctx.metrics,
        writeTimeoutMs: ctx.startup.http.requestTimeoutMilliseconds,
        collect: incrementalCollector(),
      }),
      webhooksRoute(() => board),
    ],
    openapi: outboundOpenApi,
    // CONTRACT 2: an inactive outbound connector neither reads nor acknowledges the stream.
    ...(ctx.settings.isActive ? { start: () => startPush(ctx, board) } : {}),
  };
};
