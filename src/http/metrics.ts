import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric family of CONTRACT 6.1 that the connectors expose, on a registry of their own
 * (not prom-client's global one), so tests and two connectors in one process never collide.
 */
export const makeMetrics = () => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const r = { registers: [registry] };
  return {
    registry,
    httpRequests: new Counter({ name: 'http_requests_total', help: 'HTTP requests by route, method and status', labelNames: ['route', 'method', 'status'] as const, ...r }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds', help: 'HTTP request duration', labelNames: ['route', 'method'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10], ...r,
    }),
    datastoreConnected: new Gauge({ name: 'datastore_connected', help: '1 while the data store is connected', ...r }),
    mappingOutcomes: new Counter({ name: 'inbound_mappings_total', help: 'Inbound mapping results by topic and outcome', labelNames: ['topic', 'outcome'] as const, ...r }),
    inboundWrites: new Counter({ name: 'inbound_requests_total', help: 'Inbound requests by outcome (written, rejected, failed)', labelNames: ['outcome'] as const, ...r }),
    getPoints: new Counter({ name: 'outbound_get_datapoints_total', help: 'Data points returned by GET /api/datapoints', ...r }),
    getSkipped: new Counter({ name: 'outbound_get_skipped_total', help: 'Stored values left out of GET responses because they were not JSON objects', ...r }),
    deliveries: new Counter({ name: 'webhook_deliveries_total', help: 'Batches by webhook and outcome (delivered, deadlettered)', labelNames: ['webhook', 'host', 'outcome'] as const, ...r }),
    attempts: new Counter({ name: 'webhook_attempts_total', help: 'Webhook requests by webhook and result (2xx, 4xx, 5xx, timeout, network)', labelNames: ['webhook', 'host', 'result'] as const, ...r }),
    deliveryLatency: new Histogram({
      name: 'webhook_request_duration_seconds', help: 'Webhook request latency', labelNames: ['webhook', 'host'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], ...r,
    }),
    batchSize: new Histogram({ name: 'webhook_batch_size', help: 'Data points per batch', buckets: [1, 5, 10, 50, 100, 250, 500, 1000, 5000], ...r }),
    queueDepth: new Gauge({ name: 'webhook_queue_depth', help: 'Batches waiting per webhook', labelNames: ['webhook', 'host'] as const, ...r }),
    deadLettered: new Counter({ name: 'webhook_deadlettered_total', help: 'Batches dead-lettered per webhook and reason', labelNames: ['webhook', 'host', 'reason'] as const, ...r }),
    groupLag: new Gauge({ name: 'stream_group_lag', help: 'Entries of process:updates not yet read by the consumer group', ...r }),
    groupPending: new Gauge({ name: 'stream_group_pending', help: 'Entries read but not yet acknowledged', ...r }),
    entriesLost: new Counter({ name: 'stream_entries_lost_total', help: 'Entries trimmed from process:updates before the group read them', ...r }),
    entriesRead: new Counter({ name: 'stream_entries_read_total', help: 'Entries read from process:updates', ...r }),
  };
};

export type Metrics = ReturnType<typeof makeMetrics>;
