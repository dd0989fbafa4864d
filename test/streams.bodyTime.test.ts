import { toBatch } from '../src/streams/read/batches';
import { backlogBatch } from '../src/streams/webhook/backlogEntry';
import { DATAPOINTS, formatOf, prepareBody, requestBody } from '../src/streams/webhook/body';
import { payloadOf } from '../src/streams/webhook/client';
import { bodyTimeSpent, clockMicros, type BodyWork } from '../src/telemetry/bodyTime';
import { makeMetrics } from '../src/telemetry/metrics';

/**
 * The main thread's time making request bodies, by work (src/telemetry/bodyTime.ts): each format's
 * rendering and gzip counted where it is done, for `webhook_body_seconds_total` and `npm run bench`.
 * The assertions compare counts with each other (grew or not, less than another), never with a fixed time.
 */
const hook = (format?: Record<string, unknown>) => formatOf({ url: 'http://x/in', headers: {}, secrets: [], ...(format !== undefined ? { format } : {}) } as never);
/** A batch big enough that its rendering takes time the clock sees (µs). */
const batchOf = (n: number) => toBatch(Array.from({ length: n }, (_, i) => ({ id: `1-${i}`, json: `{"casdu":1,"ioa":${i},"value":${i / 7},"timestamp":"2026-01-01T00:00:00.000Z","source":"s${i}"}` })));

/** What `work` grew by across `f`, and what every other work grew by. */
const grown = async (work: BodyWork, f: () => unknown): Promise<{ own: number; others: number }> => {
  const before = bodyTimeSpent();
  await f();
  const after = bodyTimeSpent();
  let others = 0;
  for (const k of Object.keys(after) as BodyWork[]) if (k !== work) others += after[k] - before[k];
  return { own: after[work] - before[work], others };
};

it('each format\'s rendering is counted for its own work, once per batch (a second call is the kept result)', async () => {
  const cases: Array<[BodyWork, Record<string, unknown> | undefined]> = [
    ['datapoints', undefined], ['ndjson', { type: 'ndjson' }], ['influx-line', { type: 'influx-line' }], ['jsonata', { type: 'jsonata', expression: 'datapoints.{ "v": value }' }],
  ];
  for (const [work, format] of cases) {
    const b = batchOf(5000);
    const f = hook(format);
    const first = await grown(work, () => (f.type === 'datapoints' ? requestBody(b) : prepareBody(f, b)));
    expect([work, first.own > 0, first.others]).toEqual([work, true, 0]);
    const again = await grown(work, () => (f.type === 'datapoints' ? requestBody(b) : prepareBody(f, b)));
    expect([work, again.own, again.others]).toEqual([work, 0, 0]);
  }
});

it('a backlog entry\'s stored body is sent as stored: no work counted', async () => {
  const body = `{"datapoints":[${Array.from({ length: 20000 }, (_, i) => `{"a":${i}}`).join(',')}]}`;
  const b = backlogBatch({ id: '9-0', webhookId: '1-0_1-1', body, contentType: 'application/json', traces: '' });
  const before = bodyTimeSpent();
  requestBody(b);
  await prepareBody(hook({ type: 'influx-line' }), b);
  expect(bodyTimeSpent()).toEqual(before);
});

it('gzip is counted once per body, for every webhook that compresses it', async () => {
  const body = requestBody(batchOf(5000));
  const w = { url: 'http://x/in', headers: {}, secrets: [], compression: 'gzip' } as never;
  const first = await grown('gzip', () => payloadOf(w, body));
  expect([first.own > 0, first.others]).toEqual([true, 0]);
  expect((await grown('gzip', () => payloadOf(w, body))).own).toBe(0);
  expect((await grown('gzip', () => payloadOf({ url: 'http://x/in', headers: {}, secrets: [] } as never, body))).own).toBe(0);
});

it('webhook_body_seconds_total exports what grew since the registry was made, by work', async () => {
  const metrics = makeMetrics({ kind: 'outbound', id: 't', version: '0' });
  await prepareBody(hook({ type: 'ndjson' }), batchOf(5000));
  const text = await metrics.registry.metrics();
  const line = (work: string) => Number(new RegExp(`^webhook_body_seconds_total\\{work="${work}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
  expect(line('ndjson')).toBeGreaterThan(0);
  expect([line('datapoints'), line('influx-line'), line('jsonata'), line('gzip')]).toEqual([0, 0, 0, 0]);
  // an inbound connector does not export it
  expect(await makeMetrics({ kind: 'inbound', id: 't', version: '0' }).registry.metrics()).not.toMatch(/webhook_body_/);
});
