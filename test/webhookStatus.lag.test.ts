import pino from 'pino';
import { makeMetrics } from '../src/telemetry/metrics';
import { backlogBatch } from '../src/streams/webhook/backlogEntry';
import { toBatch } from '../src/streams/read/batches';
import { makeSubscriptions, QUEUE_CAP } from '../src/streams/webhook/subscription';
import { laneObserver, makeStatusBoard } from '../src/streams/webhook/status';

/** CONTRACT 9: webhook_delivery_lag_seconds — one observation per delivered entry, from its stream ID's time to the 2xx. */
const setup = (at: number) => {
  const metrics = makeMetrics({ kind: 'outbound', id: 'lag', version: '0' });
  const subs = makeSubscriptions([{ url: 'http://a.example/hook', headers: {}, secrets: [] }], {
    maxAttempts: 1, maxInFlight: 1, queueCap: QUEUE_CAP, circuitThreshold: 3, probeIntervalMs: 1000, autoRedrive: true, timeoutMs: 1000,
  });
  const observer = laneObserver(subs[0]!, { log: pino({ level: 'silent' }), metrics, board: makeStatusBoard(subs), backlogSize: () => 0, now: () => new Date(at) });
  const values = async () => {
    const m = (await metrics.registry.getSingleMetric('webhook_delivery_lag_seconds')!.get()).values as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>;
    const pick = (name: string, le?: number) => m.find((v) => v.metricName === name && (le === undefined || v.labels.le === le))?.value;
    return { count: pick('webhook_delivery_lag_seconds_count'), sum: pick('webhook_delivery_lag_seconds_sum'), under1: pick('webhook_delivery_lag_seconds_bucket', 1), under5: pick('webhook_delivery_lag_seconds_bucket', 5) };
  };
  return { observer, values };
};

it('a delivered batch: one observation per entry, each from its own ID\'s time; skipped and dead-lettered batches none', async () => {
  const at = 1_800_000_000_000;
  const { observer, values } = setup(at);
  const entry = (ms: number, seq: number) => ({ id: `${ms}-${seq}`, json: '{}' });
  const batch = toBatch([entry(at - 3000, 0), entry(at - 3000, 1), entry(at - 500, 0)]);
  observer.finished(batch, 'delivered', 1);
  observer.finished(toBatch([entry(at - 100, 0)]), 'skipped', 0);
  observer.finished(toBatch([entry(at - 100, 1)]), 'deadlettered', 1, 'HTTP 500', 'exhausted');
  expect(await values()).toEqual({ count: 3, sum: 6.5, under1: 1, under5: 3 });
});

it('a redriven backlog entry: one observation per point it held, from its first entry\'s time; a failed redrive none', async () => {
  const at = 1_800_000_000_000;
  const { observer, values } = setup(at);
  const body = '{"datapoints":[{"v":1},{"v":2},{"v":3},{"v":4}]}';
  observer.redriven(`${at - 120_000}-0_${at - 119_000}-3`, true, undefined, backlogBatch({ id: '9-0', webhookId: `${at - 120_000}-0_${at - 119_000}-3`, body, contentType: 'application/json', traces: '' }));
  observer.redriven(`${at - 10_000}-0_${at - 10_000}-0`, false, 'HTTP 503', backlogBatch({ id: '9-1', webhookId: `${at - 10_000}-0_${at - 10_000}-0`, body, contentType: 'application/json', traces: '' }));
  expect(await values()).toEqual({ count: 4, sum: 480, under1: 0, under5: 0 });
});
