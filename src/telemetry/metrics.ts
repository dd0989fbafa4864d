import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { BODY_WORKS, bodyTimeSpent } from './bodyTime';
import { WeightedHistogram } from './weightedHistogram';

export interface MetricsIdentity {
  readonly kind: 'outbound' | 'inbound';
  readonly id: string;
  readonly version: string;
}

/**
 * prom-client's default gauges that end in `_total`: Prometheus reserves the suffix for counters
 * (`promtool check metrics` fails on them). The same numbers are in `nodejs_active_handles` and
 * `nodejs_active_requests` by type.
 */
const NON_COUNTERS_NAMED_TOTAL = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * Every metric family of CONTRACT 6.1, on a registry of its own (not prom-client's global one), so
 * tests and two connectors in one process never collide. Each connector exports only its own
 * families: the other kind's objects exist (one type for both) but are registered nowhere.
 * `rest_connector_info` says which connector `Id`, kind and version a series comes from.
 */
export const makeMetrics = (who: MetricsIdentity) => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of NON_COUNTERS_NAMED_TOTAL) registry.removeSingleMetric(name);
  const r = { registers: [registry] };
  const inbound = { registers: who.kind === 'inbound' ? [registry] : [] };
  const outbound = { registers: who.kind === 'outbound' ? [registry] : [] };
  const info = new Gauge({ name: 'rest_connector_info', help: 'Connector identity: Id, kind and version (always 1)', labelNames: ['id', 'kind', 'version'] as const, ...r });
  info.set({ id: who.id, kind: who.kind, version: who.version }, 1);
  /** What `bodyTime.ts` had counted at the last scrape (its counts are the process's; this registry adds what grew). */
  const bodyTimeSeen = { ...bodyTimeSpent() };
  return {
    registry,
    httpRequests: new Counter({ name: 'http_requests_total', help: 'HTTP requests by route, method and status', labelNames: ['route', 'method', 'status'] as const, ...r }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds', help: 'HTTP request duration', labelNames: ['route', 'method'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10], ...r,
    }),
    refused: new Counter({ name: 'http_requests_refused_total', help: 'Requests refused by the callers setting (CONTRACT 7.2), by caller and reason (forbidden, rate_limited)', labelNames: ['caller', 'reason'] as const, ...r }),
    datastoreConnected: new Gauge({ name: 'datastore_connected', help: '1 while the data store is connected', ...r }),
    evictionPolicySafe: new Gauge({ name: 'datastore_eviction_policy_safe', help: "1 while Redis's maxmemory_policy is noeviction (or cannot be read), 0 when Redis may evict connector data", ...r }),
    evictedKeys: new Counter({ name: 'datastore_evicted_keys_total', help: 'Keys Redis evicted (growth of evicted_keys between two readings)', ...r }),
    outOfMemory: new Counter({ name: 'datastore_out_of_memory_errors_total', help: 'Writes Redis refused with OOM, by kind of write', labelNames: ['write'] as const, ...r }),
    mappingOutcomes: new Counter({ name: 'inbound_mappings_total', help: 'Inbound mapping results by topic and outcome', labelNames: ['topic', 'outcome'] as const, ...inbound }),
    inboundWrites: new Counter({ name: 'inbound_requests_total', help: 'Inbound requests by outcome (written, rejected, failed, unconfirmed, replayed)', labelNames: ['outcome'] as const, ...inbound }),
    getPoints: new Counter({ name: 'outbound_get_datapoints_total', help: 'Data points returned by GET /api/datapoints', ...outbound }),
    getSkipped: new Counter({ name: 'outbound_get_skipped_total', help: 'Stored values left out of GET responses because they were not JSON objects', ...outbound }),
    deliveries: new Counter({ name: 'webhook_deliveries_total', help: 'Batches by webhook and outcome (delivered, deadlettered)', labelNames: ['webhook', 'host', 'outcome'] as const, ...outbound }),
    attempts: new Counter({ name: 'webhook_attempts_total', help: 'Webhook requests by webhook and result (2xx, 4xx, 5xx, timeout, network)', labelNames: ['webhook', 'host', 'result'] as const, ...outbound }),
    deliveryLatency: new Histogram({
      name: 'webhook_request_duration_seconds', help: 'Webhook request latency', labelNames: ['webhook', 'host'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], ...outbound,
    }),
    // CONTRACT 9: one observation per delivered entry — its stream ID's time (its append) to the 2xx that delivered it
    deliveryLag: new WeightedHistogram(
      'webhook_delivery_lag_seconds', 'End-to-end latency per delivered entry: its append (stream ID time) to the 2xx that delivered it',
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600], outbound.registers,
    ),
    batchSize: new Histogram({ name: 'webhook_batch_size', help: 'Data points per batch', buckets: [1, 5, 10, 50, 100, 250, 500, 1000, 5000], ...outbound }),
    queueDepth: new Gauge({ name: 'webhook_queue_depth', help: 'Batches waiting per webhook', labelNames: ['webhook', 'host'] as const, ...outbound }),
    deadLettered: new Counter({ name: 'webhook_deadlettered_total', help: 'Batches put in the webhook backlog, by reason (exhausted, refused, overflow, circuit, disabled)', labelNames: ['webhook', 'host', 'reason'] as const, ...outbound }),
    webhookState: new Gauge({ name: 'webhook_state', help: 'Webhook state: 1 for the current one of healthy, retrying, open, redriving, disabled', labelNames: ['webhook', 'host', 'state'] as const, ...outbound }),
    backlogBatches: new Gauge({ name: 'webhook_backlog_batches', help: 'Batches in the webhook backlog (any reason), as this replica knows them', labelNames: ['webhook', 'host'] as const, ...outbound }),
    interrogations: new Counter({ name: 'webhook_interrogations_total', help: 'Interrogations completed (CONTRACT 4.6), by cause (interrogation, periodic)', labelNames: ['webhook', 'host', 'cause'] as const, ...outbound }),
    redriven: new Counter({ name: 'webhook_redriven_total', help: 'Backlog batches re-sent, by outcome (delivered, failed)', labelNames: ['webhook', 'host', 'outcome'] as const, ...outbound }),
    pointsSent: new Counter({ name: 'webhook_points_sent_total', help: 'Data points of live batches delivered with a 2xx (first attempts, retries and redrive), each once, per webhook', labelNames: ['webhook', 'host'] as const, ...outbound }),
    pointsSuppressed: new Counter({ name: 'webhook_points_suppressed_total', help: 'Entries a webhook\'s report (CONTRACT 4.8) held back: its filter matched them, they had not changed enough', labelNames: ['webhook', 'host'] as const, ...outbound }),
    pointsSkipped: new Counter({ name: 'webhook_points_skipped_total', help: 'Data points left out of a webhook\'s bodies, by reason (unformattable: its format cannot write them)', labelNames: ['webhook', 'host', 'reason'] as const, ...outbound }),
    renderFailures: new Counter({ name: 'webhook_render_failures_total', help: 'Batches that could not be rendered in a webhook\'s format (dead-lettered, refused)', labelNames: ['webhook', 'host'] as const, ...outbound }),
    bodyTime: new Counter({
      name: 'webhook_body_seconds_total', help: 'Time the main thread spent making webhook request bodies (holding its event loop), by work: datapoints, ndjson, influx-line, jsonata (rendering), gzip',
      labelNames: ['work'] as const, ...outbound,
      collect(this: Counter<'work'>) {
        const now = bodyTimeSpent();
        for (const work of BODY_WORKS) {
          this.inc({ work }, (now[work] - bodyTimeSeen[work]) / 1e6);
          bodyTimeSeen[work] = now[work];
        }
      },
    }),
    deadLetterDropped: new Counter({ name: 'webhook_deadletter_dropped_total', help: 'Backlog batches (any reason) trimmed by Webhooks:DeadLetterMaxLength before they were delivered or replayed', labelNames: ['webhook', 'host'] as const, ...outbound }),
    groupLag: new Gauge({ name: 'stream_group_lag', help: 'Entries of process:updates not yet read by the consumer group', ...outbound }),
    groupPending: new Gauge({ name: 'stream_group_pending', help: 'Entries read but not yet acknowledged', ...outbound }),
    streamLength: new Gauge({ name: 'stream_length', help: 'Entries in process:updates (XLEN), to compare the lag with', ...outbound }),
    entriesLost: new Counter({ name: 'stream_entries_lost_total', help: 'Entries trimmed from process:updates before the group read them', ...outbound }),
    entriesUndeliverable: new Counter({ name: 'stream_entries_undeliverable_total', help: 'Entries of process:updates that could not be delivered (logged, acknowledged, skipped)', ...outbound }),
    entriesRead: new Counter({ name: 'stream_entries_read_total', help: 'Entries read from process:updates', ...outbound }),
  };
};

export type Metrics = ReturnType<typeof makeMetrics>;
