import { findAddresses, imageReader, sortAddresses } from '../src/streams/image/image';
import { privateRedis } from './helpers/redis';
import { MappedList, mappedFloat64 } from '../src/streams/image/mappedArray';

/**
 * The process image's addresses (casdu × 2^24 + ioa) in ascending order without holding the event
 * loop: a full GET and an interrogation of 1,000,000 points sorted them in one 146 ms piece, and
 * every live batch of every webhook waited for it.
 */

const SPAN = 16777216;
/** A deterministic pseudo-random sequence (the same addresses every run). */
const lcg = (seed: number) => () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;

const addresses = (n: number, seed: number): Float64Array => {
  const next = lcg(seed);
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const casdu = i % 7 === 0 ? 65535 : Math.floor(next() * 65536);
    const ioa = i % 11 === 0 ? 16777215 : i % 13 === 0 ? 0 : Math.floor(next() * SPAN);
    a[i] = casdu * SPAN + ioa;
  }
  // duplicates (SCAN may return a key twice) and both extremes
  if (n > 10) {
    a[3] = a[5]!;
    a[7] = 0;
    a[9] = 65535 * SPAN + 16777215;
  }
  return a;
};

const numeric = (a: Float64Array): number[] => Array.from(a).sort((x, y) => x - y);

describe('mappedArray: address arrays in memory of their own', () => {
  it('a list keeps every value, in order, as its memory grows past several pages', () => {
    const list = new MappedList();
    const n = 3 * 8192 + 5; // 8,192 doubles a 64 KiB page
    for (let i = 0; i < n; i++) list.push(i * 3 + 0.5);
    expect(list.length).toBe(n);
    const v = list.values();
    expect(v.length).toBe(n);
    let wrong = 0;
    for (let i = 0; i < n; i++) if (v[i] !== i * 3 + 0.5) wrong++;
    expect(wrong).toBe(0);
  });

  it('an array is zeroed and exactly as long as asked, even when its length is not a whole page', () => {
    const a = mappedFloat64(10_001);
    expect(a.length).toBe(10_001);
    expect(a.every((x) => x === 0)).toBe(true);
    expect(mappedFloat64(0).length).toBe(0);
  });
});

describe('sortAddresses', () => {
  it.each([0, 1, 2, 100, 16384, 16385, 50_000, 200_003])('%i addresses come out in ascending order, none lost or added', async (n) => {
    const a = addresses(n, n + 1);
    const expected = numeric(a);
    const sorted = await sortAddresses(a);
    expect(sorted.length).toBe(n);
    expect(Array.from(sorted)).toEqual(expected);
  });

  it('addresses within one casdu and within one block of 4,096 ioa values keep their order by ioa', async () => {
    const a = new Float64Array(40_000);
    for (let i = 0; i < a.length; i++) a[i] = 20 * SPAN + ((i * 7919) % 4096) + (i % 2) * 4096 * 3;
    expect(Array.from(await sortAddresses(a))).toEqual(numeric(a));
  });

  it('50,000 addresses of one casdu and one block of 4,096 ioa values, most of them repeated, sorted down to the last digit', async () => {
    const a = new Float64Array(50_000);
    for (let i = 0; i < a.length; i++) a[i] = 20 * SPAN + ((i * 2654435761) % 4093);
    expect(Array.from(await sortAddresses(a))).toEqual(numeric(a));
  });

  it('lets other work run while it sorts many addresses: immediates and timers queued meanwhile run before it ends', async () => {
    const a = addresses(200_000, 7);
    let immediates = 0;
    let timerRan = false;
    let sorting = true;
    const tick = (): void => {
      immediates++;
      if (sorting) setImmediate(tick);
    };
    setImmediate(tick);
    setTimeout(() => (timerRan = true), 0);
    const sorted = sortAddresses(a).finally(() => (sorting = false));
    await sorted;
    const during = immediates;
    // 200,000 addresses: a turn after every 16,384 counted, every 16,384 moved and every 16,384
    // sorted in native pieces: at least 3 × 12 = 36 turns (each address is counted once at least,
    // and these random ones are all moved and sorted once)
    expect(during).toBeGreaterThanOrEqual(36);
    expect(timerRan).toBe(true);
  });

  it('sorts a small array in place, in one piece', async () => {
    const a = new Float64Array([5 * SPAN + 1, 3, 5 * SPAN, 2 * SPAN + 9]);
    const sorted = await sortAddresses(a);
    expect(sorted).toBe(a);
    expect(Array.from(sorted)).toEqual([3, 2 * SPAN + 9, 5 * SPAN, 5 * SPAN + 1]);
  });
});

describe('findAddresses against a real Redis', () => {
  const r = privateRedis();

  it('every image key of 40,000 over three casdu values, once each, in casdu then ioa order; other keys left out', async () => {
    const expected: number[] = [];
    const pipe = r.client.pipeline();
    for (const casdu of [300, 2, 65535]) {
      for (let k = 0; k < 40_000 / 3; k++) {
        const ioa = (k * 104729) % SPAN;
        pipe.set(`process:image:casdu:${casdu}:ioa:${ioa}`, '{}');
        expected.push(casdu * SPAN + ioa);
      }
    }
    pipe.set('process:image:casdu:7:ioa:x', '{}');
    pipe.set('process:image:casdu:70000:ioa:1', '{}');
    pipe.set('connectors:a:config', '{}');
    await pipe.exec();
    const found = await findAddresses(r.client, 'process:image:casdu:*:ioa:*', () => false, undefined, 1_000_000);
    expect(found).not.toBeNull();
    expect(Array.from(found!)).toEqual([...new Set(expected)].sort((x, y) => x - y));
  });
});

describe('imageReader: what an interrogation sends (CONTRACT 4.6)', () => {
  const r = privateRedis();
  const key = (casdu: number, ioa: number) => `process:image:casdu:${casdu}:ioa:${ioa}`;
  const stored = (casdu: number, ioa: number, type: number) => JSON.stringify({ casdu, ioa, type, value: `${casdu}/${ioa}` });
  const readAll = async (reader: ReturnType<typeof imageReader>) => {
    const requests: string[][] = [];
    for (let points = await reader.next(); points !== null; points = await reader.next()) requests.push(points.map((v) => v.toString('utf8')));
    return requests;
  };
  beforeEach(() => r.client.flushall());

  it('the filter by casdu and ioa (the key) and by type (the stored point), sorted by casdu then ioa, at most maxSize a request; values that are not JSON objects and keys of another type left out', async () => {
    const pipe = r.client.pipeline();
    for (const casdu of [12, 3, 7]) for (let ioa = 0; ioa < 10; ioa++) pipe.set(key(casdu, ioa), stored(casdu, ioa, ioa % 2 === 0 ? 36 : 1));
    pipe.set(key(3, 4), 'not json');
    pipe.set(key(3, 6), '[1,2]');
    pipe.set(key(7, 2), 'null');
    pipe.set(key(7, 8), '"text"');
    pipe.del(key(12, 0));
    pipe.hset(key(12, 0), 'a', '1');
    pipe.set(key(12, 2), JSON.stringify({ casdu: 12, ioa: 2, value: 'no type' }));
    await pipe.exec();
    const reader = imageReader(r.client, { casdu: [[3, 3], [7, 12]], ioa: [[0, 8]], types: [[36, 36]] }, 4);
    const requests = await readAll(reader);
    expect(requests.map((q) => q.length)).toEqual([4, 4, 1]);
    const sent = requests.flat().map((v) => JSON.parse(v) as { casdu: number; ioa: number; type: number });
    expect(sent.map((p) => `${p.casdu}:${p.ioa}`)).toEqual(['3:0', '3:2', '3:8', '7:0', '7:4', '7:6', '12:4', '12:6', '12:8']);
    expect(sent.every((p) => p.type === 36)).toBe(true);
    // each point goes out exactly as stored
    expect(requests.flat()).toContain(stored(7, 4, 36));
  });

  it('without a filter: every point that is a JSON object; an empty image gives no request; a cancelled reader reads nothing more', async () => {
    expect(await readAll(imageReader(r.client, undefined, 10))).toEqual([]);
    await r.client.mset(key(2, 1), stored(2, 1, 1), key(1, 5), stored(1, 5, 30), key(1, 16777215), stored(1, 16777215, 13), key(1, 6), '[1]', key(1, 7), 'null', key(2, 0), 'oops');
    expect((await readAll(imageReader(r.client, undefined, 10))).flat().map((v) => (JSON.parse(v) as { ioa: number }).ioa)).toEqual([5, 16777215, 1]);
    const cancelled = imageReader(r.client, undefined, 10);
    cancelled.cancel();
    expect(await cancelled.next()).toBeNull();
  });

  it('values go out byte for byte (whitespace and non-ASCII text kept); one whose bytes are not UTF-8 goes out as its text, each bad sequence U+FFFD, as a GET sends it', async () => {
    const spaced = Buffer.from(' {"ioa":1, "name":"Schütz \u00e9"}\n');
    const bad = Buffer.concat([Buffer.from('{"ioa":2,"name":"'), Buffer.from([0xff, 0xc3]), Buffer.from('"}')]);
    await r.client.mset(key(1, 1), spaced, key(1, 2), bad, key(1, 3), Buffer.from([0x7b, 0xff, 0x7d]));
    const reader = imageReader(r.client, undefined, 10);
    const points = await reader.next();
    expect(points!.map((v) => v.toString('hex'))).toEqual([spaced.toString('hex'), Buffer.from('{"ioa":2,"name":"\ufffd\ufffd"}').toString('hex')]);
    expect(await reader.next()).toBeNull();
  });
});
