import { lastValueFrom } from 'rxjs';
import { batchesKey } from '../src/mapping/keys';
import { decodeRecords, redisDeliveryState, webhookKey } from '../src/streams/read/deliveryState';
import { eventually } from './helpers/cli';
import { privateRedis } from './helpers/redis';

/** The invariants written at the top of src/streams/read/deliveryState.ts, against a real Redis. */
const r = privateRedis();
beforeEach(() => r.client.flushall());

const GROUP = 'rest-outbound:c';
const run = <A>(o: import('rxjs').Observable<A>) => lastValueFrom(o, { defaultValue: undefined as A });

it('webhook keys: index and URL without user information or query', () => {
  expect(webhookKey(2, 'https://h.example:8443/in?token=abc')).toBe('2 https://h.example:8443/in');
  expect(webhookKey(0, 'http://h/x')).not.toBe(webhookKey(1, 'http://h/x'));
});

it('1 and 3: a recorded batch and the webhooks marked as having it are read back, for a restart, claim or reconnection', async () => {
  const { client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.record(['1-0', '1-1', '2-0']));
  await run(state.record(['3-0']));
  await run(state.markDone('1-0', webhookKey(1, 'http://b/')));
  // the layout docs/push.md describes: `{first}` → `{last}`, `{first}|{webhook}` → 1
  expect(await r.client.hgetall(batchesKey('c'))).toEqual({ '1-0': '2-0', '3-0': '3-0', '1-0|1 http://b/': '1' });
  const records = await run(redisDeliveryState(client, 'c', GROUP, 50).load());
  expect([...records.values()].map((r) => [r.first, r.last, [...r.done]])).toEqual([
    ['1-0', '2-0', ['1 http://b/']],
    ['3-0', '3-0', []],
  ]);
});

it('2: the acknowledgement deletes the record and every mark of it (also marks of webhooks the configuration no longer has) in the MULTI with XACK', async () => {
  const { client } = r;
  await client.xgroup('CREATE', 'process:updates', GROUP, '$', 'MKSTREAM');
  const id = (await client.xadd('process:updates', '*', 'data', '{}'))!;
  await client.call('XREADGROUP', 'GROUP', GROUP, 'me', 'STREAMS', 'process:updates', '>');
  const before = redisDeliveryState(client, 'c', GROUP, 50);
  await run(before.record([id]));
  await run(before.markDone(id, 'old webhook'));
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.load()); // a restart with another configuration
  await run(state.markDone(id, '0 http://a/'));
  await run(state.ack(id, [id], ['0 http://a/', '1 http://b/']));
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
  expect(((await client.xpending('process:updates', GROUP)) as [number])[0]).toBe(0);
});

it('2: a mark retried while Redis is away lands before the acknowledgement that waits for it (no record outlives its batch)', async () => {
  const { redis, client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 100);
  await client.xgroup('CREATE', 'process:updates', GROUP, '$', 'MKSTREAM');
  const id = (await client.xadd('process:updates', '*', 'data', '{}'))!;
  await run(state.record([id]));
  await redis.stop();
  let landed = 0;
  const mark = run(state.markDone(id, '0 http://a/')).then(() => landed++);
  await new Promise((r) => setTimeout(r, 50));
  // asked for while the first waits for Redis: it goes with the first's next try (group commit)
  const second = run(state.markDone(id, '1 http://b/')).then(() => landed++);
  await new Promise((r) => setTimeout(r, 250));
  expect(landed).toBe(0); // the fault took effect: nothing lands while Redis is away
  await redis.start();
  await Promise.all([mark, second]); // the pipeline acknowledges only after this
  expect(landed).toBe(2);
  expect(await client.hgetall(batchesKey('c'))).toEqual({ [id]: id, [`${id}|0 http://a/`]: '1', [`${id}|1 http://b/`]: '1' });
  await run(state.ack(id, [id], ['0 http://a/', '1 http://b/']));
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
});

it('3: the marks of the webhooks that answer together go in as few HSETs as landing each at once allows (one at once, the rest in the next)', async () => {
  const { client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.record(['1-0', '1-5']));
  const hsets = async () => Number(/cmdstat_hset:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);
  const before = await hsets();
  const keys = [0, 1, 2, 3].map((i) => webhookKey(i, `http://h${i}/`));
  await Promise.all(keys.map((k) => run(state.markDone('1-0', k))));
  expect(await hsets() - before).toBe(2);
  const records = await run(redisDeliveryState(client, 'c', GROUP, 50).load());
  expect([...records.get('1-0')!.done].sort()).toEqual([...keys].sort());
});

it('4: records of settled batches are forgotten; those of pending or newer entries are kept', async () => {
  const { client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.record(['1-0', '1-5']));
  await run(state.markDone('1-0', '0 http://a/'));
  await run(state.record(['2-0', '2-1']));
  await run(state.record(['3-0']));
  expect(await run(state.forgetSettled({ before: '2-1' }))).toBe(1);
  expect(Object.keys(await client.hgetall(batchesKey('c'))).sort()).toEqual(['2-0', '3-0']);
  expect(await run(state.forgetSettled({ upTo: '3-0' }))).toBe(2);
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
});

it('decodes any hash: a mark without its record is ignored', () => {
  const r = decodeRecords({ '5-0': '6-0', '5-0|0 http://a/': '1', '9-0|1 http://b/': '1' });
  expect([...r.values()].map((x) => [x.first, x.last, [...x.done]])).toEqual([['5-0', '6-0', ['0 http://a/']]]);
  // a part without its record too; marks and parts listed before their record; a field that is only a mark of ''
  const odd = decodeRecords({ '9-0#1 http://f/': '9-1_9-1', '7-0|0 http://a/': '1', '7-0#1 http://f/': '7-0_7-0', '7-0': '7-5', '': '8-0', '|2 http://c/': '1' });
  expect([...odd.values()].map((x) => [x.first, x.last, [...x.done], [...(x.parts ?? [])]])).toEqual([
    ['7-0', '7-5', ['0 http://a/'], [['1 http://f/', '7-0_7-0']]],
    ['', '8-0', ['2 http://c/'], []],
  ]);
});

it('an entry acknowledged on its own (no record) leaves the records alone; a record with no entries left is deleted without an XACK', async () => {
  const { client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await client.xgroup('CREATE', 'process:updates', GROUP, '$', 'MKSTREAM');
  const id = (await client.xadd('process:updates', '*', 'data', 'not json'))!;
  await client.call('XREADGROUP', 'GROUP', GROUP, 'me', 'STREAMS', 'process:updates', '>');
  await run(state.record([id, '9-9']));
  await run(state.ack(null, [id], []));
  expect(await client.hgetall(batchesKey('c'))).toEqual({ [id]: '9-9' });
  await run(state.ack(id, [], ['0 http://a/']));
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
});

it('a filtered webhook\'s part is recorded with the batch, read back, and deleted with it by the acknowledgement and by forgetting', async () => {
  const { client } = r;
  await client.xgroup('CREATE', 'process:updates', GROUP, '$', 'MKSTREAM');
  const a = (await client.xadd('process:updates', '*', 'data', '{}'))!;
  const b = (await client.xadd('process:updates', '*', 'data', '{}'))!;
  await client.call('XREADGROUP', 'GROUP', GROUP, 'me', 'STREAMS', 'process:updates', '>');
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.record([a, b], [['1 http://f/', `${b}_${b}`]]));
  await run(state.markDone(a, '0 http://a/'));
  const after = redisDeliveryState(client, 'c', GROUP, 50); // a restart
  const records = await run(after.load());
  expect([...records.values()].map((x) => [x.first, x.last, [...x.done], [...(x.parts ?? [])]])).toEqual([
    [a, b, ['0 http://a/'], [['1 http://f/', `${b}_${b}`]]],
  ]);
  await run(after.ack(a, [a, b], ['0 http://a/']));
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
  await run(state.record(['1-0', '1-5'], [['1 http://f/', '1-2_1-3']]));
  expect(await run(state.forgetSettled({ upTo: '1-5' }))).toBe(1);
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
});

it('4, at the edges: `upTo` settles a record ending at it and keeps one ending after it; `before` keeps one ending at it; nothing stale deletes nothing', async () => {
  const { client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.record(['1-0', '1-5']));
  await run(state.record(['2-0', '3-0']));
  await run(state.record(['3-1']));
  expect(await run(state.forgetSettled({ before: '1-0' }))).toBe(0);
  expect(await run(state.forgetSettled({ before: '1-5' }))).toBe(0);
  expect(Object.keys(await client.hgetall(batchesKey('c'))).sort()).toEqual(['1-0', '2-0', '3-1']);
  expect(await run(state.forgetSettled({ upTo: '3-0' }))).toBe(2);
  expect(await client.hgetall(batchesKey('c'))).toEqual({ '3-1': '3-1' });
});

it('a filtered webhook\'s part is deleted by the acknowledgement of the replica that recorded it (nothing loaded)', async () => {
  const { client } = r;
  const state = redisDeliveryState(client, 'c', GROUP, 50);
  await run(state.record(['1-0', '1-5'], [['1 http://f/', '1-2_1-3']]));
  await run(state.ack('1-0', [], ['0 http://a/', '1 http://f/']));
  expect(await client.hgetall(batchesKey('c'))).toEqual({});
});

it('a write Redis refuses (an error reply, also one inside the acknowledgement\'s MULTI) is reported with its kind and retried until it lands — never taken as done', async () => {
  const { client } = r;
  const errors: string[] = [];
  const state = redisDeliveryState(client, 'c', GROUP, 20, (kind, err) => errors.push(`${kind}: ${(err as Error).message.slice(0, 9)}`));
  await client.xgroup('CREATE', 'process:updates', GROUP, '$', 'MKSTREAM');
  const id = (await client.xadd('process:updates', '*', 'data', '{}'))!;
  await client.call('XREADGROUP', 'GROUP', GROUP, 'me', 'STREAMS', 'process:updates', '>');
  // the records' key holds a string: HSET and HDEL answer WRONGTYPE (inside MULTI: at EXEC, after XACK applied)
  await client.set(batchesKey('c'), 'not a hash');
  let recorded = false;
  const record = run(state.record([id])).then(() => (recorded = true));
  await eventually(() => (errors.length >= 2 ? true : undefined), 10000, 'the record refused twice');
  expect([recorded, [...new Set(errors)]]).toEqual([false, ['delivery record: WRONGTYPE']]);
  await client.del(batchesKey('c'));
  await record;
  await client.set(batchesKey('c'), 'not a hash');
  errors.length = 0;
  let acked = false;
  const ack = run(state.ack(id, [id], [])).then(() => (acked = true));
  await eventually(() => (errors.length >= 2 ? true : undefined), 10000, 'the acknowledgement refused twice');
  expect([acked, [...new Set(errors)]]).toEqual([false, ['acknowledgement: WRONGTYPE']]);
  await client.del(batchesKey('c'));
  await ack;
  expect(((await client.xpending('process:updates', GROUP)) as [number])[0]).toBe(0);
});
