import { eventually } from './helpers/cli';
import { backlogEntries, keepProducingUntil, webhookStates } from './helpers/outage';
import { usePushHarness } from './helpers/push';
import { VictoriaMetrics, type Series } from './helpers/victoriaMetrics';

/**
 * CONTRACT 4.7 against a real VictoriaMetrics, which answers 204 to lines it cannot parse and logs
 * them only: `influx-line` with gzip to `/influx/write` (`format.fields: []`: no extra field becomes
 * a series of junk) and a `jsonata` webhook shaping `/api/v1/import` lines (`output: ndjson`),
 * through an outage (the server stopped, answering nothing) long enough to open both circuits and send batches to the backlog unsent. Only
 * a read-back with its export API shows what it kept: every point, at its value and time.
 */
const { outbound, r } = usePushHarness();
let vm: VictoriaMetrics;
beforeAll(async () => {
  vm = await VictoriaMetrics.start();
}, 60000);
afterAll(async () => vm.close());

/** Times within VictoriaMetrics' retention, a second apart. */
const T0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
const point = (i: number) => ({ casdu: 3, ioa: i, type: 13, value: i % 3 === 0 ? i + 0.5 : i, timestamp: new Date(T0 + i * 1000).toISOString(), quality: 'good', source: 'rtu 1' });
const produce = async (from: number, to: number) => {
  const pipe = r.client.pipeline();
  for (let i = from; i < to; i++) pipe.xadd('process:updates', '*', 'casdu', '3', 'ioa', String(i), 'data', JSON.stringify(point(i)));
  await pipe.exec();
};
const IMPORT = '[datapoints.{ "metric": { "__name__": "plant_value", "casdu": $string(casdu), "ioa": $string(ioa) }, "values": [value], "timestamps": [$toMillis(timestamp)] }]';

/** ioa → [value, time] of every sample kept (a sample sent twice is kept twice: VictoriaMetrics does not de-duplicate here). */
const samples = (series: Series[]) => {
  const out = new Map<number, Array<[number, number]>>();
  for (const s of series) {
    const ioa = Number(s.metric.ioa);
    for (const [k, v] of s.values.entries()) out.set(ioa, [...(out.get(ioa) ?? []), [v, s.timestamps[k]!]]);
  }
  return out;
};

it('influx-line with gzip and a JSONata import shape through an outage that opened both circuits: every point kept, at its value and time', async () => {
  const { base } = await outbound('vm', [
    { url: `${vm.url}/influx/write?precision=ms`, format: { type: 'influx-line', measurement: 'scada', fields: [] }, compression: 'gzip' },
    { url: `${vm.url}/api/v1/import`, format: { type: 'jsonata', output: 'ndjson', expression: IMPORT } },
  ], { Webhooks__CircuitFailureThreshold: '2', Webhooks__ProbeIntervalSeconds: '0.5', Webhooks__MaxAttempts: '2' });
  await produce(0, 30);
  await eventually(async () => ((await vm.export('scada_value')).length === 30 && (await vm.export('plant_value')).length === 30 ? true : undefined), 30000, '30 series of each');
  // cut off: it answers nothing, each attempt times out
  vm.pause();
  let n = 30;
  const more = async () => {
    await produce(n, n + 3);
    n += 3;
  };
  const bothOpen = async () => (await webhookStates(base)).every((w) => w.state === 'open');
  await keepProducingUntil(more, bothOpen, 'both circuits to open');
  const circuit = async (webhook: string) => (await backlogEntries(r.client, 'vm')).filter((e) => e.reason === 'circuit' && e.webhook === webhook);
  await keepProducingUntil(more, async () => (await circuit('0')).length >= 2 && (await circuit('1')).length >= 2, 'batches of both in the backlog as circuit');
  // the fault took effect: both circuits open, batches in the backlog that never had an attempt
  expect(await bothOpen()).toBe(true);
  const entries = await backlogEntries(r.client, 'vm');
  for (const e of entries) {
    // each the body its webhook takes: line protocol, or import lines — never the default body VictoriaMetrics would drop with a 204
    if (e.webhook === '0') {
      expect([e.reason, e.contentType, e.body!.split('\n').slice(0, -1).every((l) => /^scada,casdu=3,ioa=\d+,source=rtu\\ 1,type=13 value=[0-9.]+ \d+$/.test(l))]).toEqual([e.reason, 'text/plain; charset=utf-8', true]);
    } else {
      expect([e.reason, e.contentType, e.body!.split('\n').slice(0, -1).every((l) => (JSON.parse(l) as { metric: { __name__: string } }).metric.__name__ === 'plant_value')]).toEqual([e.reason, 'application/x-ndjson', true]);
    }
  }
  vm.resume();
  await eventually(async () => ((await backlogEntries(r.client, 'vm')).length === 0 ? true : undefined), 60000, 'both backlogs redriven');
  await eventually(async () => ((await vm.export('scada_value')).length === n && (await vm.export('plant_value')).length === n ? true : undefined), 30000, `${n} series of each`);
  for (const name of ['scada_value', 'plant_value']) {
    const kept = samples(await vm.export(name));
    expect([name, kept.size]).toEqual([name, n]);
    for (let i = 0; i < n; i++) {
      // a batch sent twice (its answer lost with the server) is kept twice: the same value and time
      const got = [...new Set(kept.get(i)!.map(([v, t]) => `${v}@${t}`))];
      expect([name, i, got]).toEqual([name, i, [`${point(i).value}@${T0 + i * 1000}`]]);
    }
  }
  // format.fields: []: no series of extra fields (quality would be a series of zeros)
  expect(await vm.export('scada_quality')).toEqual([]);
  // nothing was answered 204 and dropped
  expect(vm.unparsed()).toEqual([]);
}, 150000);

