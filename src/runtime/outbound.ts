import { catchError, concat, defer, EMPTY, exhaustMap, from, ignoreElements, interval, merge, mergeMap, type Observable, retry, tap, timer } from 'rxjs';
import { interrogationRoute, outboundRoutes, webhooksRoute } from '../http/outbound/routes';
import { outboundOpenApi } from '../http/openapi/outbound';
import { backlogRoutes } from '../http/outbound/backlogRoutes';
import { groupName } from '../mapping/keys';
import { redisBacklog } from '../streams/webhook/backlog';
import { exponentialBackoff } from '../streams/webhook/answers';
import { webhookLane } from '../streams/webhook/lane';
import { redisDeliveryState } from '../streams/read/deliveryState';
import { redisReportState, reportingOf } from '../streams/webhook/reportState';
import { redisDisabledMarks } from '../streams/webhook/disabledMarks';
import { readGroupHealth } from '../streams/read/groupHealth';
import { inFlightEntries } from '../streams/read/inFlight';
import { makeLossTracker } from '../streams/read/lossTracker';
import { pushPipeline$ } from '../streams/push/pipeline';
import { readUpdates$ } from '../streams/read/reader';
import { redisStreamPort } from '../streams/read/redisStreamPort';
import { deliveryDefaults, makeSubscriptions, type WebhookSubscription } from '../streams/webhook/subscription';
import { deliveryTraces, webhookClient } from '../streams/webhook/client';
import type { InterrogationEvent } from '../streams/webhook/interrogation';
import { USER_AGENT } from '../version';
import { incrementalCollector } from './collector';
import type { Background, ConnectorContext, ConnectorParts } from './connector';
import { connectDatastore } from './datastore';
import { pushObserver } from '../streams/push/observer';
import { laneObserver, makeStatusBoard, type WebhookStatus } from '../streams/webhook/status';
import { makeInterrogations, type Interrogations } from '../streams/interrogation/requests';
import { imageThread } from './interrogation/imageThread';

const LOSS_CHECK_MS = 5000;

/** The push side, wired: per subscription a client, a backlog, an observer and a lane; then the reader and the pipeline. */
const startPush = (ctx: ConnectorContext, subscriptions: readonly WebhookSubscription[], board: WebhookStatus[], interrogations: Interrogations): Background => {
  const { startup, metrics } = ctx;
  const log = ctx.log.child({ component: 'push' });
  const retryMs = Math.round(startup.datastore.connectionRetrySeconds * 1000);
  const group = groupName(startup.id);
  const observe = pushObserver(log, metrics, group, startup.datastore.connectionRetrySeconds);
  const reader = connectDatastore(ctx.redisOptions, startup.datastore.connectionRetrySeconds, log, 'stream-reader');
  const redis = ctx.datastore.client;
  const state = redisDeliveryState(redis, startup.id, group, retryMs, observe.writeFailed);
  const port = redisStreamPort(reader.client, startup.id, startup.datastore.consumerName, state);
  let stopping = false;
  /** Entries read and not yet acknowledged (bounded by the lanes' queues). */
  const inFlight = inFlightEntries();

  const webhooks = subscriptions.map((s) => {
    const backlog = redisBacklog({
      redis, connectorId: startup.id, consumer: startup.datastore.consumerName, index: s.index, url: s.webhook.url,
      maxLength: startup.webhooks.deadLetterMaxLength, retryMs,
      leaseMs: Math.max(10_000, s.settings.probeIntervalMs * 3),
      onWriteError: (err) => observe.writeFailed('backlog', err),
      onDropped: (item) => observe.backlogDropped(s, item),
    });
    const status = laneObserver(s, { log, metrics, board, backlogSize: () => backlog.size() });
    // CONTRACT 4.6: what the lane says of interrogations also ends a queued or running one (409 no more)
    const observer = { ...status, interrogation: (e: InterrogationEvent) => (status.interrogation?.(e), interrogations.event(s.index, e)) };
    // CONTRACT 9: with tracing on, a span per request linked to its entries, and traceparent sent
    const traced = ctx.tracing === undefined ? undefined : { tracing: ctx.tracing, group };
    return { s, backlog, observer, client: webhookClient(s, USER_AGENT, Date.now, traced) };
  });

  const tracker = makeLossTracker();
  const checkLoss$: Observable<never> = defer(() => readGroupHealth(redis, group)).pipe(
    tap((h) => h !== null && observe.groupHealth(h, tracker(h))),
    ignoreElements(),
    catchError((err: Error) => (observe.groupHealthFailed(err), EMPTY)),
  );
  /**
   * Every backlog read again beside the loss check (CONTRACT 4.4): what other replicas added, what
   * a previous run left, and what the cap trimmed (counted and logged as dropped, whatever the
   * entry's reason) show whether or not the lane redrives.
   */
  const scanBacklogs$: Observable<never> = from(webhooks).pipe(
    mergeMap((w) => w.backlog.pending().pipe(tap(() => w.observer.backlogChanged()), catchError((err: Error) => (observe.backlogReadFailed(w.s, err), EMPTY)))),
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
      lookAtPending: inFlight.look,
      onError: observe.readFailed,
      onClaim: observe.claimed,
    }))),
    tap((chunk) => {
      if (!chunk.replay) observe.entriesRead(chunk.entries.length);
      inFlight.add(chunk.entries.map((e) => e.id));
    }),
  );

  const marks = redisDisabledMarks(redis, startup.id, retryMs, (err) => observe.writeFailed('delivery record', err));
  /** Which webhooks a 410 Gone disabled (CONTRACT 4.5), read before their lanes start; retried while Redis is away. */
  const disabled$ = defer(() => marks.load(subscriptions)).pipe(
    retry({ delay: (err: Error) => (observe.readFailed(err), timer(retryMs)) }),
  );

  // CONTRACT 4.8: the report state of every webhook with `report`, loaded (or reset) before the first batch is decided
  const reporting = reportingOf(subscriptions);
  const report = redisReportState(redis, startup.id, retryMs, reporting, {
    onReset: (w, fields) => log.info({ webhook: w.index, host: w.host, points: fields }, 'report state reset: the webhook\'s url, filter or report changed; every point\'s next entry is reported'),
    onDecided: (w, suppressed) => suppressed > 0 && metrics.pointsSuppressed.inc({ webhook: String(w.index), host: w.host }, suppressed),
    onWriteError: (err) => observe.writeFailed('delivery record', err),
  });

  const pipeline$ = defer(() => ctx.datastore.ready()).pipe(
    mergeMap(() => report.load()),
    mergeMap(() => disabled$),
    mergeMap((disabled) => entries$.pipe(pushPipeline$({
      subscriptions,
      windowMs: startup.webhooks.batchWindowMilliseconds,
      maxSize: startup.webhooks.batchMaxSize,
      lane: (s) => {
        const w = webhooks[s.index]!;
        const initial = interrogations.initial(s);
        return webhookLane({
          subscription: s, post: w.client.post, backoff: exponentialBackoff(), backlog: w.backlog, observer: w.observer,
          disabled: marks.mark(s), initiallyDisabled: disabled.has(s.key), interrogations: interrogations.asks(s), ...(initial !== undefined ? { initial } : {}),
        });
      },
      state: {
        record: state.record,
        markDone: state.markDone,
        ack: (first, ids, keys) => state.ack(first, ids, keys).pipe(tap(() => inFlight.acknowledged(ids))),
      },
      ...(reporting.length > 0 ? { report } : {}),
      onUndecodable: observe.undeliverable,
      onBatch: observe.batch,
    }))),
  );

  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  let fail!: (reason: string) => void;
  const failed = new Promise<string>((resolve) => (fail = resolve));
  // The one subscription of the push side; its errors cannot end delivery silently.
  const subscription = pipeline$.subscribe({
    error: (err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      observe.failed(reason);
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
  observe.started(startup.datastore.consumerName, subscriptions.length);
  interrogations.start();

  return {
    failed,
    stop: async (deadline) => {
      stopping = true;
      monitor.unsubscribe();
      interrogations.stop();
      let timer: NodeJS.Timeout | undefined;
      // CONTRACT 4.3: at most StopTimeoutMilliseconds, within the connector's whole stop.
      const waitMs = Math.max(0, Math.min(deadline, Date.now() + startup.webhooks.stopTimeoutMilliseconds) - Date.now());
      const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), waitMs)));
      const how = await Promise.race([done, timeout]);
      clearTimeout(timer);
      if (how === 'timeout') observe.stopTimedOut(inFlight.size(), waitMs);
      subscription.unsubscribe();
      for (const w of webhooks) w.client.close();
      await Promise.all([reader.close(), interrogations.close()]);
    },
  };
};

export const buildOutbound = (ctx: ConnectorContext): ConnectorParts => {
  // every webhook's settings, the process defaults merged in once
  const subscriptions = makeSubscriptions(ctx.settings.webhooks, deliveryDefaults(ctx.startup.webhooks), ctx.webhookFiles);
  const board = makeStatusBoard(subscriptions);
  const collect = incrementalCollector();
  const pushLog = ctx.log.child({ component: 'push' });
  // CONTRACT 9: an interrogation's requests get their spans here, as every other request does
  const traced = ctx.tracing === undefined ? undefined : { tracing: ctx.tracing, group: groupName(ctx.startup.id) };
  const interrogations = makeInterrogations({
    redis: ctx.datastore.client, connectorId: ctx.startup.id, consumer: ctx.startup.datastore.consumerName, collect,
    retryMs: Math.round(ctx.startup.datastore.connectionRetrySeconds * 1000),
    thread: (s, cause, p) => imageThread({
      redis: { ...ctx.redisOptions, commandTimeout: ctx.startup.datastore.commandTimeoutMilliseconds },
      retrySeconds: ctx.startup.datastore.connectionRetrySeconds,
      subscription: { index: s.index, webhook: s.webhook, settings: s.settings, files: s.files },
      userAgent: USER_AGENT, cause, p, maxSize: ctx.startup.webhooks.batchMaxSize,
    }, { log: (level, fields, msg) => pushLog[level](fields, msg), trace: deliveryTraces(s, traced) }),
    onError: (what, err) => pushLog.warn({ err: err.message }, `${what} failed; trying again`),
  }, subscriptions);
  return {
    dataRoutes: [
      ...outboundRoutes({
        redis: ctx.datastore.client,
        isConnected: ctx.datastore.isConnected,
        log: ctx.log.child({ component: 'pull' }),
        metrics: ctx.metrics,
        writeTimeoutMs: ctx.startup.http.requestTimeoutMilliseconds,
        collect,
      }),
      webhooksRoute(() => board),
      interrogationRoute(interrogations.request),
      // CONTRACT 6.8: the backlog's commands, as `rest-connector deadletter` runs them
      ...backlogRoutes({ redis: ctx.datastore.client, connectorId: ctx.startup.id, subscriptions, userAgent: USER_AGENT, tracing: traced, log: pushLog }),
    ],
    openapi: outboundOpenApi,
    // CONTRACT 2: an inactive outbound connector neither reads nor acknowledges the stream.
    ...(ctx.settings.isActive ? { start: () => startPush(ctx, subscriptions, board, interrogations) } : {}),
  };
};
