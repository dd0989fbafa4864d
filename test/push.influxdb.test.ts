import { eventually } from './helpers/cli';
import { InfluxDb } from './helpers/influxdb';
import { usePushHarness } from './helpers/push';

/**
 * CONTRACT 4.7 against a real InfluxDB 1.x: points of every type, with extra fields and awkward tag
 * values, written through `influx-line` with gzip and read back with InfluxQL; InfluxDB killed and
 * started again in the middle: nothing lost (a series keeps one point per time, so a batch sent
 * again lands once).
 */
const { outbound, r } = usePushHarness();
let influx: InfluxDb;
beforeAll(async () => {
  influx = await InfluxDb.start();
  await influx.query('CREATE DATABASE plant');
}, 60000);
afterAll(async () => influx.close());

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
/** Point `i`: its value's type by i % 4, a quality field, a source with a space, comma and `=`. */
const point = (i: number) => ({
  casdu: 7, ioa: i, type: i % 4 === 1 ? 1 : 13,
  value: i % 4 === 0 ? i + 0.25 : i % 4 === 1 ? i % 8 === 1 : i % 4 === 2 ? i : `state ${i}`,
  timestamp: new Date(T0 + i * 1000).toISOString(),
  source: 'plant a,b=c', quality: 'good', count: i,
});
const produce = async (from: number, to: number) => {
  const pipe = r.client.pipeline();
  for (let i = from; i < to; i++) pipe.xadd('process:updates', '*', 'casdu', '7', 'ioa', String(i), 'data', JSON.stringify(point(i)));
  await pipe.exec();
};
const rows = async () => influx.query('SELECT * FROM scada ORDER BY time', 'plant');

it('every value, tag and timestamp as written, across an InfluxDB kill and restart', async () => {
  const { c } = await outbound('influx', [{ url: `${influx.url}/write?db=plant&precision=ms`, format: { type: 'influx-line', measurement: 'scada' }, compression: 'gzip' }], {
    Webhooks__CircuitBreakerThreshold: '2', Webhooks__ProbeIntervalMilliseconds: '300',
  });
  await produce(0, 40);
  await eventually(async () => ((await rows()).length === 40 ? true : undefined), 30000, '40 points in InfluxDB');
  await influx.kill();
  await produce(40, 80);
  // the connector meets a dead InfluxDB meanwhile: retries, then its backlog
  await new Promise((res) => setTimeout(res, 2000));
  // it did: attempts failed while InfluxDB was down
  await c.waitForLog((l) => l.msg === 'webhook attempt failed');
  await influx.run();
  await eventually(async () => ((await rows()).length === 80 ? true : undefined), 60000, '80 points in InfluxDB');
  const got = await rows();
  expect(got).toHaveLength(80);
  for (const [i, row] of got.entries()) {
    const p = point(i);
    const value = typeof p.value === 'boolean' ? (p.value ? 1 : 0) : typeof p.value === 'number' ? p.value : null;
    expect(row).toEqual({
      time: T0 + i * 1000, casdu: '7', ioa: String(i), source: 'plant a,b=c', type: String(p.type),
      value, value_text: typeof p.value === 'string' ? p.value : null, quality: 'good', count: i,
    });
  }
}, 120000);
