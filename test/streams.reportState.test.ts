import { lastValueFrom } from 'rxjs';
import type { Webhook } from '../src/config/webhookSettings';
import { batchesKey, reportedKey } from '../src/mapping/keys';
import { decodeRecords } from '../src/streams/read/deliveryState';
import type { DecodedEntry } from '../src/streams/read/entries';
import { redisReportState, reportingOf, type ReportObserver } from '../src/streams/webhook/reportState';
import { RESET_SCRIPT } from '../src/streams/webhook/reportScript';
import { deliveryDefaults, makeSubscriptions } from '../src/streams/webhook/subscription';
import { privateRedis } from './helpers/redis';

/** The invariants written at the top of src/streams/webhook/reportState.ts, against a real Redis. */
const r = privateRedis();
beforeEach(() => r.client.flushall());

const run = <A>(o: import('rxjs').Observable<A>) => lastValueFrom(o);
/** A decision's parts as their records' text (null: nothing). */
const partsOf = (m: ReadonlyMap<string, { value: string } | null>) => [...m].map(([k, v]) => [k, v === null ? null : v.value]);
const DEFAULTS = deliveryDefaults({ maxAttempts: 3, maxInFlight: 2, circuitFailureThreshold: 3, probeIntervalSeconds: 5, autoRedrive: true, timeoutMilliseconds: 1000, allowedNetworks: [], maxBodyBytes: 1 << 24 } as never);
const hook = (url: string, report: Webhook['report'], filter?: Webhook['filter']): Webhook => ({ url, headers: {}, secrets: [], report, ...(filter !== undefined ? { filter } : {}) });
const e = (id: string, ioa: number, value: unknown, extra: Record<string, unknown> = {}): DecodedEntry => ({
  id, json: JSON.stringify({ casdu: 1, ioa, value, ...extra }), casdu: 1, ioa, type: undefined,
});
const events = () => {
  const seen = { resets: [] as Array<[number, number]>, suppressed: [] as Array<[number, number]>, errors: [] as unknown[] };
  const o: ReportObserver = { onReset: (w, n) => seen.resets.push([w.index, n]), onDecided: (w, n) => seen.suppressed.push([w.index, n]), onWriteError: (err) => seen.errors.push(err) };
  return { seen, o };
};
const stateOf = (webhooks: Webhook[], observer: ReportObserver) => {
  const reporting = reportingOf(makeSubscriptions(webhooks, DEFAULTS));
  return { reporting, state: redisReportState(r.client, 'c', 50, reporting, observer) };
};

it('1: the decision of every reporting webhook and the batch\'s record land in one write: parts, done marks and each point\'s state', async () => {
  const webhooks = [hook('http://a/', { deadband: [{ absolute: 0.5 }] }), hook('http://b/', { maxSilenceSeconds: 60 }, { ioa: [[9, 9]] }), hook('http://c/', { deadband: [{ absolute: 0 }] })];
  const { seen, o } = events();
  const { reporting, state } = stateOf(webhooks, o);
  await run(state.load());
  const parts = await run(state.record([e('1-0', 1, 10), e('1-1', 1, 10.2), e('1-2', 1, 11), e('2-0', 2, 'on')], [['9 http://x/', '1-0_1-0']]));
  // a: 10 and 11 of point 1:1 (10.2 held back), and 2-0 of 1:2; b: its filter matches nothing → nothing
  expect(partsOf(parts)).toEqual([[reporting[0]!.key, '1-0_2-0 -1-1'], [reporting[1]!.key, null], [reporting[2]!.key, '1-0_2-0']]);
  const records = decodeRecords(await r.client.hgetall(batchesKey('c')));
  const rec = records.get('1-0')!;
  expect([rec.last, [...rec.done], Object.fromEntries(rec.parts!)]).toEqual(['2-0', [reporting[1]!.key], { '9 http://x/': '1-0_1-0', [reporting[0]!.key]: '1-0_2-0 -1-1', [reporting[2]!.key]: '1-0_2-0' }]);
  const a = await r.client.hgetall(reportedKey('c', 0));
  expect(Object.keys(a).sort()).toEqual(['1:1', '1:2', '~']);
  expect(a['1:1']).toBe('1-2\n11\n{}');
  // the version grew by one with the write, for every reporting webhook (b wrote no point)
  expect(await r.client.hgetall(reportedKey('c', 1))).toEqual({ '~': `${reporting[1]!.digest} 1` });
  expect(a['~']).toBe(`${reporting[0]!.digest} 1`);
  expect(seen.suppressed).toEqual([[0, 1], [1, 0], [2, 0]]);
});

it('2: a replica that decided against records another replica changed since gets them from the script, decides again, and holds back what the other reported', async () => {
  const webhooks = [hook('http://a/', { deadband: [{ absolute: 0.5 }] })];
  const one = stateOf(webhooks, events().o);
  const two = stateOf(webhooks, events().o);
  await run(one.state.load());
  await run(two.state.load());
  // replica one reports 10 for point 1:1; replica two has not seen that
  expect(partsOf(await run(one.state.record([e('1-0', 1, 10)], [])))).toEqual([[one.reporting[0]!.key, '1-0_1-0']]);
  // two's copy is stale: decided alone, 10.2 would be its first entry of the point and reported
  const parts = await run(two.state.record([e('2-0', 1, 10.2)], []));
  expect(partsOf(parts)).toEqual([[two.reporting[0]!.key, null]]);
  expect((await r.client.hget(reportedKey('c', 0), '1:1'))!.split('\n')[0]).toBe('1-0');
  // and two's copy now holds one's record: 10.6 is measured from 10
  expect(partsOf(await run(two.state.record([e('3-0', 1, 10.6)], [])))).toEqual([[two.reporting[0]!.key, '3-0_3-0']]);
});

it('a batch whose record landed before (its answer lost) gets the parts recorded then, not a second decision', async () => {
  const webhooks = [hook('http://a/', { deadband: [{ absolute: 0.5 }] })];
  const { state, reporting } = stateOf(webhooks, events().o);
  await run(state.load());
  const batch = [e('1-0', 1, 10), e('1-1', 1, 10.2), e('1-2', 1, 11)];
  const first = await run(state.record(batch, []));
  // decided again against the state it left, 10 would be older than 11, and not sent
  const again = await run(stateOf(webhooks, events().o).state.record(batch, []));
  expect(partsOf(again)).toEqual(partsOf(first));
  expect(first.get(reporting[0]!.key)?.value).toBe('1-0_1-2 -1-1');
  // the decision made now carries its entries; the one read back, its record only
  expect([first.get(reporting[0]!.key)?.entries?.map((x) => x.id), again.get(reporting[0]!.key)?.entries]).toEqual([['1-0', '1-2'], undefined]);
});

it('4: at start a state built under other settings is emptied (every point reported again); a webhook without report and an index no longer configured lose theirs', async () => {
  const { o } = events();
  const old = stateOf([hook('http://a/?db=x', { deadband: [{ absolute: 0.5 }] }), hook('http://b/', { maxSilenceSeconds: 5 })], o);
  await run(old.state.load());
  await run(old.state.record([e('1-0', 1, 10), e('1-1', 2, 10)], []));
  await r.client.hset(reportedKey('c', 7), '1:1', 'x');
  expect(await r.client.hlen(reportedKey('c', 0))).toBe(3);
  // the URL's query changed (another database), webhook 1 lost its report
  const { seen, o: o2 } = events();
  const next = stateOf([hook('http://a/?db=y', { deadband: [{ absolute: 0.5 }] }), hook('http://b/', undefined)], o2);
  await run(next.state.load());
  expect(await r.client.hgetall(reportedKey('c', 0))).toEqual({ '~': `${next.reporting[0]!.digest} 0` });
  expect(seen.resets).toEqual([[0, 2]]);
  expect(await r.client.exists(reportedKey('c', 1), reportedKey('c', 7))).toBe(0);
  // the same settings again keep the state
  const same = stateOf([hook('http://a/?db=y', { deadband: [{ absolute: 0.5 }] })], events().o);
  await run(same.state.record([e('2-0', 1, 10)], []));
  await run(same.state.load());
  expect(await r.client.hlen(reportedKey('c', 0))).toBe(2);
  expect(partsOf(await run(same.state.record([e('3-0', 1, 10.1)], [])))).toEqual([[same.reporting[0]!.key, null]]);
});

it('a state emptied by a replica with other settings while this one runs: the script resets it to this one\'s and this one decides against nothing', async () => {
  const a = stateOf([hook('http://a/', { deadband: [{ absolute: 0.5 }] })], events().o);
  await run(a.state.load());
  await run(a.state.record([e('1-0', 1, 10)], []));
  await r.client.hset(reportedKey('c', 0), '~', 'another');
  expect(partsOf(await run(a.state.record([e('2-0', 1, 10.1)], [])))).toEqual([[a.reporting[0]!.key, '2-0_2-0']]);
  expect(await r.client.hget(reportedKey('c', 0), '~')).toBe(`${a.reporting[0]!.digest} 1`);
});

it('webhooks of the same rules and the same records share one decision; once one\'s state is emptied under it, each is decided against its own', async () => {
  const rules = { deadband: [{ absolute: 0.5 }] };
  const a = stateOf([hook('http://a/', rules), hook('http://b/', rules), hook('http://c/', rules, { ioa: [[1, 1]] })], events().o);
  await run(a.state.load());
  const first = await run(a.state.record([e('1-0', 1, 10), e('1-1', 2, 20)], []));
  // a and b: one decision, one part (c's filter is another rule set: decided apart)
  expect(partsOf(first)).toEqual([[a.reporting[0]!.key, '1-0_1-1'], [a.reporting[1]!.key, '1-0_1-1'], [a.reporting[2]!.key, '1-0_1-0']]);
  expect(first.get(a.reporting[0]!.key)).toBe(first.get(a.reporting[1]!.key));
  // the twin's writes went once in the script's arguments and landed in both states
  const [ha, hb] = [await r.client.hgetall(reportedKey('c', 0)), await r.client.hgetall(reportedKey('c', 1))];
  expect([hb['1:1'], hb['1:2'], hb['~']]).toEqual(['1-0\n10\n{}', '1-1\n20\n{}', `${a.reporting[1]!.digest} 1`]);
  expect([ha['1:1'], ha['1:2']]).toEqual([hb['1:1'], hb['1:2']]);
  expect(partsOf(await run(a.state.record([e('2-0', 1, 10.2)], [])))).toEqual([[a.reporting[0]!.key, null], [a.reporting[1]!.key, null], [a.reporting[2]!.key, null]]);
  // b's state emptied by something else: b's copy is reset by the script's answer, a's is not — 10.3 is within a's deadband, b's first entry
  await r.client.hset(reportedKey('c', 1), '~', 'another');
  const after = await run(a.state.record([e('3-0', 1, 10.3)], []));
  expect(partsOf(after)).toEqual([[a.reporting[0]!.key, null], [a.reporting[1]!.key, '3-0_3-0'], [a.reporting[2]!.key, null]]);
  // and they stay apart while their records differ: point 1:2 was reported to a (20), never to b since its reset
  expect(partsOf(await run(a.state.record([e('4-0', 2, 20.1)], [])))).toEqual([[a.reporting[0]!.key, null], [a.reporting[1]!.key, '4-0_4-0'], [a.reporting[2]!.key, null]]);
});

it('a batch of more points than one script command takes (chunks of 1,000 arguments)', async () => {
  const { state, reporting } = stateOf([hook('http://a/', { deadband: [{ absolute: 0.5 }] })], events().o);
  await run(state.load());
  const batch = Array.from({ length: 2500 }, (_, i) => e(`1-${i}`, i, i));
  expect((await run(state.record(batch, []))).get(reporting[0]!.key)?.value).toBe('1-0_1-2499');
  expect(await r.client.hlen(reportedKey('c', 0))).toBe(2501);
  const again = Array.from({ length: 2500 }, (_, i) => e(`2-${i}`, i, i === 1700 ? 5000 : i));
  expect((await run(state.record(again, []))).get(reporting[0]!.key)?.value).toBe('2-1700_2-1700 +2-1700');
});

it('3: a copy that knows the version needs no other check; once another process wrote, the batch\'s points are checked, until ten quiet batches let it read the state again', async () => {
  const webhooks = [hook('http://a/', { deadband: [{ absolute: 0.5 }] })];
  const one = stateOf(webhooks, events().o);
  await run(one.state.load());
  const key = reportedKey('c', 0);
  const digest = one.reporting[0]!.digest;
  // a write behind its back that the version does not show is not seen: the version is the check
  await r.client.hset(key, '1:1', '0-5\n10\n{}');
  expect(partsOf(await run(one.state.record([e('1-0', 1, 10.2)], [])))).toEqual([[one.reporting[0]!.key, '1-0_1-0']]);
  expect(await r.client.hget(key, '~')).toBe(`${digest} 1`);
  // another process writes (its version moves to 2): the next batch finds the version moved
  const two = stateOf(webhooks, events().o);
  await run(two.state.load());
  await run(two.state.record([e('2-0', 2, 5)], []));
  expect(await r.client.hget(key, '~')).toBe(`${digest} 2`);
  // one decides 2:… against Redis's record, not against its copy (which knows nothing of point 1:2)
  expect(partsOf(await run(one.state.record([e('3-0', 2, 5.2)], [])))).toEqual([[one.reporting[0]!.key, null]]);
  // unsure now: a record changed behind its back is seen in the next batch of that point
  await r.client.hset(key, '1:1', '2-9\n20\n{}');
  expect(partsOf(await run(one.state.record([e('4-0', 1, 10.2)], [])))).toEqual([[one.reporting[0]!.key, '4-0_4-0']]);
  // ten batches without another writer: the copy is read again whole, and trusted on the version
  // alone again — a record changed behind its back without the version is not seen (10.2 against
  // its copy's 10.2, not Redis's 99: had it checked the point, 4-0's successor would be reported)
  for (let i = 0; i < 11; i++) await run(one.state.record([e(`${5 + i}-0`, 3, i)], []));
  await r.client.hset(key, '1:1', '2-9\n99\n{}');
  expect(partsOf(await run(one.state.record([e('30-0', 1, 10.2)], [])))).toEqual([[one.reporting[0]!.key, null]]);
});

it('4: emptying a state built under other settings spares one a replica of these settings emptied and wrote to first', async () => {
  const a = stateOf([hook('http://a/', { deadband: [{ absolute: 0.5 }] })], events().o);
  await r.client.hset(reportedKey('c', 0), '~', 'old 7', '1:1', '1-0\n1\n{}');
  await run(a.state.load());
  await run(a.state.record([e('2-0', 1, 10)], []));
  // a replica that read the old digest before a's reset empties only what is still another's
  const digest = a.reporting[0]!.digest;
  expect(await r.client.eval(RESET_SCRIPT, 1, reportedKey('c', 0), digest)).toBe(`${digest} 1`);
  expect(await r.client.hget(reportedKey('c', 0), '1:1')).toMatch(/^2-0\n/);
  expect(await r.client.eval(RESET_SCRIPT, 1, reportedKey('c', 0), 'other')).toBeNull();
  expect(await r.client.hgetall(reportedKey('c', 0))).toEqual({ '~': 'other 0' });
});

it('a field that is no record (written by something else) counts as never reported, and an unsure copy does not loop on it', async () => {
  const webhooks = [hook('http://a/', { deadband: [{ absolute: 0.5 }] })];
  const one = stateOf(webhooks, events().o);
  await run(one.state.load());
  // another writer: one is unsure from then on, and compares the batch's points
  const two = stateOf(webhooks, events().o);
  await run(two.state.load());
  await run(two.state.record([e('1-0', 2, 5)], []));
  await r.client.hset(reportedKey('c', 0), '1:1', 'garbage');
  expect(partsOf(await run(one.state.record([e('2-0', 1, 10)], [])))).toEqual([[one.reporting[0]!.key, '2-0_2-0']]);
  expect(await r.client.hget(reportedKey('c', 0), '1:1')).toBe('2-0\n10\n{}');
  // loaded with such a field: the same
  await r.client.hset(reportedKey('c', 0), '1:3', '{"x":1}');
  const three = stateOf(webhooks, events().o);
  await run(three.state.load());
  expect(partsOf(await run(three.state.record([e('3-0', 3, 1)], [])))).toEqual([[three.reporting[0]!.key, '3-0_3-0']]);
});

it('4: the digest follows the whole url, the filter and the report, and nothing else', () => {
  const digest = (w: Webhook) => reportingOf(makeSubscriptions([w], DEFAULTS))[0]!.digest;
  const base = hook('http://a/?db=x', { deadband: [{ absolute: 0.5 }] }, { ioa: [[1, 5]] });
  const others = [
    hook('http://a/?db=y', { deadband: [{ absolute: 0.5 }] }, { ioa: [[1, 5]] }),
    hook('http://a/?db=x', { deadband: [{ absolute: 0.6 }] }, { ioa: [[1, 5]] }),
    hook('http://a/?db=x', { deadband: [{ absolute: 0.5 }] }, { ioa: [[1, 6]] }),
  ];
  expect(new Set([base, ...others].map(digest)).size).toBe(4);
  expect(digest({ ...base, headers: { 'X-A': 'b' }, secrets: ['s'], maxRequestsPerSecond: 3 })).toBe(digest(base));
});
