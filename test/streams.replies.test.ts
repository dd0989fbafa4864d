import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { redisDeliveryState } from '../src/streams/read/deliveryState';
import { decodeEntry, decodeReadReply } from '../src/streams/read/entries';
import { redisStreamPort } from '../src/streams/read/redisStreamPort';
import { readGroupHealth } from '../src/streams/read/groupHealth';
import { makeLossTracker } from '../src/streams/read/lossTracker';
import { compareIds } from '../src/streams/store/streamIds';
import { decodeRange, decodeStreamId } from '../src/streams/store/replies';
import { TestRedis } from './helpers/redis';

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await TestRedis.start();
  client = redis.client(); // protocol 2, as the connectors use
});
afterAll(async () => {
  client.disconnect();
  await redis.destroy();
});
beforeEach(() => client.flushall());

describe('stream reply shapes under RESP2 (the protocol the connectors choose)', () => {
  it('XADD and XRANGE as the backlog reads them: decoded, and anything else thrown rather than cast', async () => {
    const id = decodeStreamId(await client.xadd('s', '*', 'a', '1', 'b', '2'));
    expect(decodeRange(await client.xrange('s', '-', '+'))).toEqual([{ id, fields: ['a', '1', 'b', '2'] }]);
    expect(decodeRange(await client.xrange('missing', '-', '+'))).toEqual([]);
    expect(() => decodeStreamId(null)).toThrow('unexpected stream ID reply: null');
    expect(() => decodeStreamId('OK')).toThrow('unexpected stream ID reply');
    expect(() => decodeRange(null)).toThrow('unexpected XRANGE reply');
    expect(() => decodeRange([['1-0', ['a']]])).toThrow('unexpected XRANGE entry');
    expect(() => decodeRange([['1-0', null]])).toThrow('unexpected XRANGE entry');
  });

  it('XREADGROUP: null on timeout, [[stream, [[id, fields]]]] otherwise, [id, null] for a pending entry trimmed away', async () => {
    await client.xgroup('CREATE', 'process:updates', 'g', '$', 'MKSTREAM');
    expect(decodeReadReply(await client.call('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', 10, 'STREAMS', 'process:updates', '>'), 'process:updates')).toEqual([]);
    const id1 = await client.xadd('process:updates', '*', 'casdu', '1', 'ioa', '2', 'source', 's', 'data', '{"type":1}');
    const id2 = await client.xadd('process:updates', '*', 'casdu', '1', 'ioa', '3', 'source', 's', 'data', '{"type":13}');
    const read = decodeReadReply(await client.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', 10, 'STREAMS', 'process:updates', '>'), 'process:updates');
    expect(read).toEqual([
      { id: id1, fields: ['casdu', '1', 'ioa', '2', 'source', 's', 'data', '{"type":1}'] },
      { id: id2, fields: ['casdu', '1', 'ioa', '3', 'source', 's', 'data', '{"type":13}'] },
    ]);
    expect(decodeEntry(read[0]!)).toEqual({ ok: true, entry: { id: id1, json: '{"type":1,"casdu":1,"ioa":2,"source":"s"}', casdu: 1, ioa: 2, type: 1 } });
    await client.xdel('process:updates', id1!);
    const pending = decodeReadReply(await client.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'process:updates', '0'), 'process:updates');
    expect(pending).toEqual([{ id: id1, fields: null }, { id: id2, fields: expect.any(Array) }]);
    expect(decodeEntry(pending[0]!)).toMatchObject({ ok: false, reason: expect.stringMatching(/deleted/) });
  });

  it('XINFO CONSUMERS, XPENDING and XCLAIM through the port: idle consumers, whole pending lists, never a fresh entry', async () => {
    const state = redisDeliveryState(client, 'x', 'rest-outbound:x', 100);
    const port = redisStreamPort(client, 'x', 'alive', state);
    await lastValueFrom(port.createGroup('$'));
    const ids = [await client.xadd('process:updates', '*', 'data', '{"n":1}'), await client.xadd('process:updates', '*', 'data', '{"n":2}')];
    await client.call('XREADGROUP', 'GROUP', 'rest-outbound:x', 'dead', 'STREAMS', 'process:updates', '>');
    await new Promise((r) => setTimeout(r, 30));
    const consumers = await lastValueFrom(port.consumers());
    expect(consumers).toEqual([{ name: 'dead', pending: 2, idleMs: expect.any(Number) }]);
    expect(consumers[0]!.idleMs).toBeGreaterThanOrEqual(25);
    // entries idle for less than the minimum are not claimed
    expect(await lastValueFrom(port.claimFrom('dead', 'alive~dead', 60000, 10, new Map()))).toEqual([]);
    expect(await lastValueFrom(port.claimFrom('dead', 'alive~dead', 20, 1, new Map()))).toEqual([{ id: ids[0], fields: ['data', '{"n":1}'] }]);
    expect(await lastValueFrom(port.claimFrom('dead', 'alive~dead', 20, 10, new Map()))).toEqual([{ id: ids[1], fields: ['data', '{"n":2}'] }]);
    expect(await lastValueFrom(port.claimFrom('dead', 'alive~dead', 20, 10, new Map()))).toEqual([]);
    // the claimed entries are held by the claim consumer, not by 'alive' itself
    expect(await lastValueFrom(port.readPending('alive~dead', '0', 10))).toEqual([{ id: ids[0], fields: ['data', '{"n":1}'] }, { id: ids[1], fields: ['data', '{"n":2}'] }]);
    expect(await lastValueFrom(port.readPending('alive', '0', 10))).toEqual([]);
    // a consumer's idle time is refreshed by touch (a blocking read that times out does not refresh it on Redis 7.0)
    await new Promise((r) => setTimeout(r, 60));
    const idle = async (name: string) => (await lastValueFrom(port.consumers())).find((c) => c.name === name)!.idleMs;
    expect(await idle('alive~dead')).toBeGreaterThanOrEqual(50);
    await lastValueFrom(port.touch('alive~dead'));
    expect(await idle('alive~dead')).toBeLessThan(50);
    expect(await lastValueFrom(port.readPending('alive~dead', '0', 10))).toHaveLength(2); // touch took nothing
    await lastValueFrom(port.touch('dead'));
    expect(await idle('dead')).toBeLessThan(50);
    expect(await lastValueFrom(port.settled())).toEqual({ before: ids[0] });
    await client.xack('process:updates', 'rest-outbound:x', ...ids.map(String));
    expect(await lastValueFrom(port.settled())).toEqual({ upTo: ids[1] });
    await lastValueFrom(port.deleteConsumer('alive~dead'));
    expect((await lastValueFrom(port.consumers())).map((c) => c.name)).toEqual(['alive', 'dead']);
    // one replica at a time holds the claim lease
    const other = redisStreamPort(client, 'x', 'other', state);
    expect(await lastValueFrom(port.takeClaimLease(1000))).toBe(true);
    expect(await lastValueFrom(other.takeClaimLease(1000))).toBe(false);
    // renewed and given up only by its holder; a restarted process of the same name is another holder
    const again = redisStreamPort(client, 'x', 'alive', state);
    expect(await lastValueFrom(again.takeClaimLease(1000))).toBe(false);
    expect([await lastValueFrom(other.renewClaimLease(1000)), await lastValueFrom(port.renewClaimLease(1000))]).toEqual([false, true]);
    await lastValueFrom(other.releaseClaimLease());
    expect(await lastValueFrom(other.takeClaimLease(1000))).toBe(false);
    await lastValueFrom(port.releaseClaimLease());
    expect(await lastValueFrom(other.takeClaimLease(1000))).toBe(true);
  });

  it('a claim page that would cut a recorded batch takes the rest of it in the same XCLAIM (whole batches at a time)', async () => {
    const state = redisDeliveryState(client, 'y', 'rest-outbound:y', 100);
    const port = redisStreamPort(client, 'y', 'alive', state);
    await lastValueFrom(port.createGroup('$'));
    const ids: string[] = [];
    for (let n = 1; n <= 6; n++) ids.push((await client.xadd('process:updates', '*', 'data', `{"n":${n}}`))!);
    await client.call('XREADGROUP', 'GROUP', 'rest-outbound:y', 'dead', 'STREAMS', 'process:updates', '>');
    // the dead consumer had batched entries 2..5 (recorded), 1 and 6 on their own
    await lastValueFrom(state.record(ids.slice(1, 5)));
    const records = await lastValueFrom(state.load());
    await new Promise((r) => setTimeout(r, 30));
    const claimed = (count: number) => lastValueFrom(port.claimFrom('dead', 'alive~dead', 20, count, records)).then((es) => es.map((e) => e.id));
    expect(await claimed(3)).toEqual(ids.slice(0, 5)); // a page of 3 ends inside the batch: 4 and 5 come with it
    expect(await claimed(3)).toEqual([ids[5]]);
    expect(await claimed(3)).toEqual([]);
  });

  it('RESP3 would answer XREADGROUP in another shape, which the decoder refuses rather than misreads', async () => {
    const resp3 = new Redis({ port: redis.port, host: '127.0.0.1', protocol: 3 });
    try {
      await client.xgroup('CREATE', 'process:updates', 'g', '$', 'MKSTREAM');
      await client.xadd('process:updates', '*', 'data', '{}');
      const reply = await resp3.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'process:updates', '>');
      expect(() => decodeReadReply(reply, 'process:updates')).toThrow(/unexpected XREADGROUP/);
    } finally {
      resp3.disconnect();
    }
  });

  it('decodes entries: fills casdu/ioa/source only where data lacks them; refuses data that is not an object', () => {
    expect(decodeEntry({ id: '1-0', fields: ['casdu', '5', 'ioa', '6', 'source', 'x', 'data', '{"casdu":9,"v":1}'] })).toEqual({
      ok: true, entry: { id: '1-0', json: '{"casdu":9,"v":1,"ioa":6,"source":"x"}', casdu: 9, ioa: 6, type: undefined },
    });
    // complete objects pass through as stored, byte for byte
    const stored = '{"casdu":1, "ioa":2,"source":"s","type":36,"value":1.50,"quality":"good"}';
    expect(decodeEntry({ id: '1-0', fields: ['casdu', '1', 'ioa', '2', 'source', 's', 'data', stored] })).toEqual({ ok: true, entry: { id: '1-0', json: stored, casdu: 1, ioa: 2, type: 36 } });
    expect(decodeEntry({ id: '1-0', fields: ['data', '[1]'] })).toMatchObject({ ok: false, reason: 'data is not a JSON object' });
    expect(decodeEntry({ id: '1-0', fields: ['casdu', '1'] })).toMatchObject({ ok: false, reason: 'entry has no data field' });
  });
});

describe('loss detection', () => {
  it('compares stream IDs numerically', () => {
    expect(compareIds('9-0', '10-0')).toBe(-1);
    expect(compareIds('10-2', '10-10')).toBe(-1);
    expect(compareIds('5-1', '5-1')).toBe(0);
  });

  it('sees a group that read part of the stream before it was trimmed, and counts each loss once', async () => {
    await client.xgroup('CREATE', 'process:updates', 'g', '$', 'MKSTREAM');
    for (let i = 0; i < 20; i++) await client.xadd('process:updates', '*', 'data', '{}');
    await client.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', 5, 'STREAMS', 'process:updates', '>');
    for (let i = 0; i < 80; i++) await client.xadd('process:updates', '*', 'data', '{}');
    await client.xtrim('process:updates', 'MAXLEN', 30);
    const h = await readGroupHealth(client, 'g');
    expect(h).toMatchObject({ length: 30, pending: 5, behindFirstEntry: true, trimmedUnread: 65 });
    const track = makeLossTracker();
    expect(track(h!)).toEqual({ newlyLost: 65, lagWarning: true });
    expect(track(h!)).toEqual({ newlyLost: 0, lagWarning: false });
    expect(await readGroupHealth(client, 'missing')).toBeNull();
  });

  it('reports nothing for a group that keeps up', async () => {
    await client.xgroup('CREATE', 'process:updates', 'g', '$', 'MKSTREAM');
    for (let i = 0; i < 10; i++) await client.xadd('process:updates', '*', 'data', '{}');
    await client.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'process:updates', '>');
    await client.xtrim('process:updates', 'MAXLEN', 3);
    const h = await readGroupHealth(client, 'g');
    expect(h).toMatchObject({ behindFirstEntry: false, trimmedUnread: 0, lag: 0 });
    expect(makeLossTracker()(h!)).toEqual({ newlyLost: 0, lagWarning: false });
  });
});
