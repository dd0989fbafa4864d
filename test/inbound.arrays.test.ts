import { buildInbound } from '../src/runtime/inbound';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { postJson, request } from './helpers/http';
import { monitored as monitorCommands, privateRedis } from './helpers/redis';
import type { Redis } from 'ioredis';

/**
 * CONTRACT 5.5 against a private Redis: what devices really send — readings selected by name, value
 * maps, scaling, and many readings in one request, written all or nothing in ONE MULTI (counted
 * with MONITOR), the stream getting every item's entries in order and the image the latest.
 */
const MAPPINGS = [
  { name: 'temp', topic: 'edge', casdu: 5, ioa: 1, type: 36, valuePath: 'readings[name=temp].value', timestampPath: 'ts', scale: { factor: 0.1, offset: 0 } },
  { name: 'level', topic: 'edge', casdu: 5, ioa: 2, type: 13, valuePath: 'readings[name=level].raw', valueType: 'int', scale: { raw: [0, 4095], scaled: [0, 100], clamp: true } },
  { name: 'state', topic: 'edge', casdu: 5, ioa: 3, type: 1, valuePath: 'state', valueType: 'bool', valueMap: { RUN: true, STOP: false }, timestampPath: 'ts' },
  { name: 'last', topic: 'edge', casdu: 5, ioa: 4, type: 36, valuePath: 'samples[-1]' },
];
const reading = (minute: number, temp: number, level: number, state: string) => ({
  ts: `2026-11-21T08:0${minute}:00Z`, state, samples: [1, 2, minute],
  readings: [{ name: 'level', raw: level }, { name: 'temp', value: temp }],
});

const r = privateRedis();
let client: Redis;
let app: InProcess;
const url = `/api/datapoints?topic=edge`;

beforeEach(async () => {
  client = r.client;
  await client.flushall();
  app = await startInProcess('inbound', buildInbound, r.redis, { mappings: MAPPINGS }, { Http__MaxBatchItems: '5' });
});
afterEach(async () => app.close());

const monitored = <A>(f: () => Promise<A>) => monitorCommands(client, f);
const count = (commands: string[], name: string) => commands.filter((c) => c === name).length;
const entries = async () => (await client.xrange('process:updates', '-', '+')).map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]!) as Record<string, unknown>);
const image = async (ioa: number) => JSON.parse((await client.get(`process:image:casdu:5:ioa:${ioa}`)) ?? 'null') as Record<string, unknown> | null;

it('an array of buffered readings: one MULTI/EXEC, every reading in the stream in order, the image on the latest', async () => {
  const body = [reading(1, 215, 0, 'RUN'), reading(2, 216, 2048, 'RUN'), reading(3, 220, 5000, 'STOP')];
  const { result: r, commands } = await monitored(() => postJson(`${app.url}${url}`, body));
  expect(r.status).toBe(200);
  expect(r.json()).toEqual({ topic: 'edge', items: 3, succeeded: ['temp', 'level', 'state', 'last'] });
  expect([count(commands, 'multi'), count(commands, 'exec'), count(commands, 'xadd'), count(commands, 'mset')]).toEqual([1, 1, 12, 1]);
  const written = await entries();
  expect(written.map((p) => [p.ioa, p.value, p.timestamp])).toEqual([
    [1, 21.5, '2026-11-21T08:01:00.000Z'], [2, 0, expect.any(String)], [3, true, '2026-11-21T08:01:00.000Z'], [4, 1, expect.any(String)],
    [1, 21.6, '2026-11-21T08:02:00.000Z'], [2, 50.01221001221, expect.any(String)], [3, true, '2026-11-21T08:02:00.000Z'], [4, 2, expect.any(String)],
    [1, 22, '2026-11-21T08:03:00.000Z'], [2, 100, expect.any(String)], [3, false, '2026-11-21T08:03:00.000Z'], [4, 3, expect.any(String)],
  ]);
  // without a timestamp path: the time the request was received, the same for every item
  expect(new Set(written.filter((p) => p.ioa === 2 || p.ioa === 4).map((p) => p.timestamp)).size).toBe(1);
  expect([(await image(1))?.value, (await image(2))?.value, (await image(3))?.value, (await image(4))?.value]).toEqual([22, 100, false, 3]);
});

it('one item failing: 422 with every failure and its item, error entries with item, nothing else written (one MULTI of error entries)', async () => {
  const body = [reading(1, 215, 0, 'RUN'), { ...reading(2, 216, 1, 'FAULT'), samples: [] }, reading(3, 220, 5, 'STOP')];
  const { result: r, commands } = await monitored(() => postJson(`${app.url}${url}`, body));
  expect(r.status).toBe(422);
  expect(r.json()).toEqual({
    topic: 'edge', message: '2 of 12 mappings failed', items: 3,
    failed: [
      { signalId: 'state', error: `value "FAULT" at path 'state' is not in the value map`, item: 1 },
      { signalId: 'last', error: "value not found at path 'samples[-1]'", item: 1 },
    ],
    succeeded: [{ signalId: 'temp' }, { signalId: 'level' }],
  });
  expect(await client.keys('process:image:*')).toEqual([]);
  expect(await client.xlen('process:updates')).toBe(0);
  const errors = await client.xrange('connectors:test-connector:errors', '-', '+');
  expect(errors.map(([, f]) => [f[f.indexOf('signalId') + 1], f[f.indexOf('item') + 1]])).toEqual([['state', '1'], ['last', '1']]);
  expect([count(commands, 'multi'), count(commands, 'exec'), count(commands, 'mset')]).toEqual([1, 1, 0]);
  // counted per mapping and item: 2 failed, the other 10 applications succeeded
  const metrics = await (await fetch(`${app.url}/metrics`)).text();
  expect(metrics).toContain('inbound_mappings_total{topic="edge",outcome="failed"} 2');
  expect(metrics).toContain('inbound_mappings_total{topic="edge",outcome="succeeded"} 10');
});

it('a single object is answered exactly as before, without items', async () => {
  const r = await postJson(`${app.url}${url}`, reading(4, 100, 4095, 'RUN'));
  expect(r.status).toBe(200);
  expect(r.json()).toEqual({ topic: 'edge', succeeded: ['temp', 'level', 'state', 'last'] });
  expect((await entries()).map((p) => p.value)).toEqual([10, 100, true, 4]);
});

it('an Idempotency-Key works for an array as for an object: the same answer replayed, nothing written twice', async () => {
  const body = [reading(1, 215, 0, 'RUN'), reading(2, 216, 1, 'STOP')];
  const first = await postJson(`${app.url}${url}`, body, { 'Idempotency-Key': 'batch-17' });
  const again = await postJson(`${app.url}${url}`, body, { 'Idempotency-Key': 'batch-17' });
  expect([first.status, again.status, again.headers['idempotent-replayed']]).toEqual([200, 200, 'true']);
  expect(again.json()).toEqual(first.json());
  expect(await client.xlen('process:updates')).toBe(8);
  const other = await postJson(`${app.url}${url}`, body.slice(0, 1), { 'Idempotency-Key': 'batch-17' });
  expect([other.status, (other.json() as { code: string }).code]).toEqual([422, 'idempotency_key_reused']);
  expect(await client.xlen('process:updates')).toBe(8);
});

it('Http:MaxBatchItems bounds the array: more is 400 invalid_body naming the limit, nothing written', async () => {
  const r = await postJson(`${app.url}${url}`, Array.from({ length: 6 }, (_, i) => reading(i, 1, 1, 'RUN')));
  expect(r.status).toBe(400);
  expect(r.json()).toEqual({ code: 'invalid_body', message: 'the body must be a JSON object or an array of 1 to 5 objects: the array has 6 items, more than 5 (Http:MaxBatchItems)' });
  expect((await postJson(`${app.url}${url}`, Array.from({ length: 5 }, (_, i) => reading(i, 1, 1, 'RUN')))).status).toBe(200);
  expect(await client.xlen('process:updates')).toBe(20);
});

it('an item that is a number too large for a double (raw [1e400]) is 400 invalid_body naming its index, nothing written', async () => {
  for (const [body, message] of [
    ['[1e400]', 'the body must be a JSON object or an array of 1 to 5 objects: item 0 is not an object'],
    ['[{"minute":1},-1e400]', 'the body must be a JSON object or an array of 1 to 5 objects: item 1 is not an object'],
    ['1e400', 'the body must be a JSON object or an array of 1 to 5 objects'],
  ]) {
    const r = await request(`${app.url}${url}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    expect([body, r.status, r.json()]).toEqual([body, 400, { code: 'invalid_body', message }]);
  }
  expect(await client.exists('process:updates', 'connectors:test-connector:errors')).toBe(0);
});

describe('a gateway\'s array of devices (examples/gateway-devices.json: "array": "whole")', () => {
  const GATEWAY = (JSON.parse(require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'examples', 'gateway-devices.json'), 'utf8')) as { mappings: object[] }).mappings;
  let gw: InProcess;
  beforeEach(async () => {
    gw = await startInProcess('inbound', buildInbound, r.redis, { mappings: GATEWAY }, { Http__MaxBatchItems: '5' });
  });
  afterEach(async () => gw.close());
  const body = [{ id: 'T1', temp_raw: 2150, state: 'RUN' }, { id: 'T2', temp_raw: 3024, state: 'STOP' }];

  it('each mapping picks its own device: one entry per mapping, the values rounded, in one MULTI', async () => {
    const m = await monitored(() => postJson(`${gw.url}/api/datapoints?topic=gateway-3`, body));
    expect([m.result.status, m.result.json()]).toEqual([200, { topic: 'gateway-3', items: 2, succeeded: ['t1-temp', 't1-running', 't2-temp', 't2-running'] }]);
    expect(count(m.commands, 'multi')).toBe(1);
    const stream = (await client.xrange('process:updates', '-', '+')).map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]!) as { ioa: number; value: unknown });
    expect(stream.map((p) => [p.ioa, p.value])).toEqual([[101, 21.5], [102, true], [201, 30.24], [202, false]]);
    expect(JSON.parse((await client.get('process:image:casdu:7:ioa:201'))!).value).toBe(30.24);
  });

  it('a device missing fails its mappings without an item, and nothing is written', async () => {
    const res = await postJson(`${gw.url}/api/datapoints?topic=gateway-3`, body.slice(0, 1));
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({
      topic: 'gateway-3', message: '2 of 4 mappings failed', items: 1,
      failed: [{ signalId: 't2-temp', error: "value not found at path '[id=T2].temp_raw'" }, { signalId: 't2-running', error: "value not found at path '[id=T2].state'" }],
      succeeded: [{ signalId: 't1-temp' }, { signalId: 't1-running' }],
    });
    expect(await client.exists('process:updates')).toBe(0);
  });
});

it('mappings applied to every item of an array of devices, failing on each: the 422 says so and names "array": "whole"', async () => {
  const r2 = await postJson(`${app.url}${url}`, [{ id: 'T1', temp_raw: 1 }, { id: 'T2', temp_raw: 2 }]);
  expect(r2.status).toBe(422);
  expect((r2.json() as { message: string }).message).toBe('8 of 8 mappings failed: each mapping was applied to every item of the array; for an array of devices, where each mapping picks its own, give the mapping "array": "whole" and a path that selects its item ([id=T1].temp_raw)');
});
