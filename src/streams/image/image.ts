import type { Redis } from 'ioredis';
import type { PointFilter } from '../../config/webhookSettings';
import { imageAddress, IOA_SPAN, keyOf } from './address';
import { inRanges } from '../webhook/filter';
import { processImagePattern } from '../../mapping/keys';
import { scanPoint } from './jsonBytes';
import { MappedList } from './mappedArray';

/**
 * Reading the process image (`process:image:casdu:*:ioa:*`), for a full GET (CONTRACT 4.1) and
 * for an interrogation (4.6): the addresses first (SCAN, as numbers, sorted), then the values a
 * chunk at a time (MGET), so that memory holds 8 bytes an address and a chunk or two of values.
 */

/**
 * Keys Redis looks at per SCAN: small replies (measured on a GET of 1,000,000 points, before
 * `collect` was added: peak RSS growth 106–110 MB with 10000, 61–72 MB with 1000, at about the
 * same speed).
 */
const SCAN_COUNT = 1000;
/** Keys scanned between two requests for a full collection (see `collect` below). */
export const COLLECT_EVERY = 200_000;
/** MGETs of an interrogation under way at once (as a full GET keeps a few ahead of the one it writes). */
const CHUNKS_AHEAD = 4;


/** A stored value goes out as stored (unknown fields kept) when it is a JSON object. */
export const isJsonObjectText = (text: string): boolean => {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
};

/** Addresses a turn of `sortAddresses` counts, moves or sorts before other work runs (measured: about a millisecond). */
const SORT_STEP = 16384;
/**
 * Ranges at most this long are sorted natively, longer ones by the next digit (1,000,000 addresses
 * over 10 CASDU values, one process, four runs: 130–145 ms with 256–1024 here, 170 ms with 16,384).
 */
const NATIVE_SORT = 512;
const INV_SPAN = 1 / IOA_SPAN;
/** Radix digit `pass` of an address: the CASDU (16 bits), the IOA's high 12 bits, then its low 12 bits. */
const digitOf = (v: number, pass: number): number => {
  const casdu = Math.floor(v * INV_SPAN); // exact: a power of two scales without rounding
  return pass === 2 ? casdu : ((v - casdu * IOA_SPAN) >>> (pass * 12)) & 4095;
};
const countDigits = (a: Float64Array, from: number, to: number, pass: number, counts: Uint32Array): void => {
  for (let i = from; i < to; i++) counts[digitOf(a[i]!, pass)]!++;
};
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * One sort's state, shared by all its ranges: the work done since the last turn, and the bucket
 * arrays of each digit (a range's children use the next digit's, so one pair a digit serves them all).
 */
interface SortBudget { work: number; readonly next: Uint32Array[]; readonly ends: Uint32Array[] }
const spend = async (b: SortBudget, work: number): Promise<void> => {
  b.work += work;
  if (b.work >= SORT_STEP) {
    b.work = 0;
    await turn();
  }
};

/**
 * Sorts `a[lo, hi)`, whose addresses agree in every digit above `pass`: its addresses moved into one
 * bucket per digit `pass` in place (cycle by cycle, as an American flag sort does), then each bucket
 * of more than NATIVE_SORT sorted by the next digit, each smaller one natively.
 */
const sortRange = async (a: Float64Array, lo: number, hi: number, pass: number, budget: SortBudget): Promise<void> => {
  const next = budget.next[pass]!.fill(0);
  const ends = budget.ends[pass]!;
  const buckets = next.length;
  for (let i = lo; i < hi; i += SORT_STEP) {
    countDigits(a, i, Math.min(hi, i + SORT_STEP), pass, next);
    await spend(budget, Math.min(hi, i + SORT_STEP) - i);
  }
  let sum = lo;
  for (let d = 0; d < buckets; d++) {
    const c = next[d]!;
    next[d] = sum;
    sum += c;
    ends[d] = sum;
  }
  let moves = 0;
  for (let b = 0; b < buckets; b++) {
    while (next[b]! < ends[b]!) {
      // the address at the bucket's first unplaced position goes where its digit says; the one
      // it displaces goes on, until an address of bucket `b` closes the cycle
      let v = a[next[b]!]!;
      let d = digitOf(v, pass);
      while (d !== b) {
        const j = next[d]!++;
        const w = a[j]!;
        a[j] = v;
        v = w;
        d = digitOf(v, pass);
        if (++moves === SORT_STEP) {
          moves = 0;
          await spend(budget, SORT_STEP);
        }
      }
      a[next[b]!++] = v;
    }
  }
  if (pass === 0) return; // every bucket holds one address, repeated
  for (let b = 0, from = lo; b < buckets; from = ends[b]!, b++) {
    const n = ends[b]! - from;
    if (n <= 1) continue;
    if (n <= NATIVE_SORT) {
      a.subarray(from, ends[b]!).sort();
      await spend(budget, n);
    } else await sortRange(a, from, ends[b]!, pass - 1, budget);
  }
};

/**
 * Addresses in ascending order, in place, without holding the event loop: a most-significant-digit
 * radix sort (CASDU, the IOA's high bits, its low bits) that lets other work run every SORT_STEP
 * addresses counted, moved or sorted natively (about a millisecond). `TypedArray.prototype.sort` took 146 ms for 1,000,000 addresses in
 * one piece: every live batch of every webhook waited for it (the other webhooks' p99 under an
 * interrogation). In place: a second array of the same size (8 MB for 1,000,000 points) was the
 * largest part of a full GET's peak memory.
 */
export const sortAddresses = async (a: Float64Array): Promise<Float64Array> => {
  if (a.length <= SORT_STEP) return a.sort();
  const buckets = [4096, 4096, 65536];
  await sortRange(a, 0, a.length, 2, { work: 0, next: buckets.map((n) => new Uint32Array(n)), ends: buckets.map((n) => new Uint32Array(n)) });
  return a;
};

/**
 * Addresses of the keys matching the pattern, as one number each (casdu × 2^24 + ioa: exact, and
 * ordered by casdu, then ioa), sorted and deduplicated (SCAN may repeat a key). Numbers, not key
 * strings, are what memory holds for the length of the response: 8 bytes a point, sorted in place. `keep` drops
 * addresses as they are found; `gone` stops the scan (null); `collect` asks for a full garbage
 * collection every `every` keys scanned (src/runtime/collector.ts).
 */
export const findAddresses = async (
  redis: Redis, pattern: string, gone: () => boolean, collect: (() => void) | undefined, every: number, keep?: (address: number) => boolean,
  sort: (a: Float64Array) => Promise<Float64Array> = sortAddresses,
): Promise<Float64Array | null> => {
  // 8 bytes a point, no boxed numbers, and memory that goes back to the system (mappedArray.ts)
  const found = new MappedList();
  let scanned = 0;
  let cursor = '0';
  do {
    // a client that left gets no more scanning (CONTRACT 6.5): its SCAN would only load Redis
    if (gone()) return null;
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    for (const key of keys) {
      const addr = imageAddress(key);
      if (addr < 0 || (keep !== undefined && !keep(addr))) continue;
      found.push(addr);
    }
    if (collect !== undefined && Math.floor((scanned + keys.length) / every) > Math.floor(scanned / every)) collect();
    scanned += keys.length;
    cursor = next;
  } while (cursor !== '0');
  const sorted = await sort(found.values());
  let unique = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[unique++] = sorted[i]!;
  return sorted.subarray(0, unique);
};

/** The SCAN pattern of a filter: one CASDU when it names exactly one, else every key. */
const patternOf = (f: PointFilter | undefined): string => {
  const c = f?.casdu;
  return processImagePattern(c !== undefined && c.length === 1 && c[0]![0] === c[0]![1] ? c[0]![0] : undefined, undefined);
};

export interface ImageReader {
  /**
   * The next at most `maxSize` points in address order, as stored (UTF-8 bytes; a value whose bytes
   * are not UTF-8 as its text, `U+FFFD` for each bad sequence, as a GET sends it); null when there
   * are no more.
   */
  next(): Promise<Buffer[] | null>;
  /** Stops: a scan under way ends at its next page. */
  cancel(): void;
}

export interface ImageReaderOptions {
  /** Called every `COLLECT_EVERY` keys scanned and once the scan is done: see `collector.ts`. */
  readonly collect?: (() => void) | undefined;
  /** How the addresses are sorted: `sortAddresses` (never holds the event loop long) unless the reader has a thread to itself. */
  readonly sort?: (a: Float64Array) => Promise<Float64Array>;
}

/** Sorts in place, in one piece: for a thread of its own (146 ms for 1,000,000 addresses, and no second array). */
export const sortInPlace = (a: Float64Array): Promise<Float64Array> => Promise.resolve(a.sort());

/**
 * CONTRACT 4.6: the process image as an interrogation sends it — the points the filter keeps
 * (CASDU and IOA by the key's address, type by the stored point's `type`), values that are not
 * JSON objects skipped, sorted by casdu then ioa, `maxSize` at a time, a few MGETs of `maxSize`
 * keys under way ahead of the request being made.
 */
export const imageReader = (redis: Redis, filter: PointFilter | undefined, maxSize: number, o: ImageReaderOptions = {}): ImageReader => {
  const { collect } = o;
  let cancelled = false;
  let addresses: Float64Array | undefined;
  let at = 0;
  /** MGETs under way, oldest first: several, so that reading never waits for a round trip. */
  const ahead: Array<Promise<Array<Buffer | null>>> = [];
  let ready: Buffer[] = [];
  const fetchMore = (): void => {
    while (ahead.length < CHUNKS_AHEAD && at < addresses!.length) {
      const from = at;
      at = Math.min(addresses!.length, at + maxSize);
      const values = redis.mgetBuffer(...Array.from(addresses!.subarray(from, at), keyOf));
      values.catch(() => undefined); // observed when awaited; this only prevents an unhandled rejection
      ahead.push(values);
    }
  };
  const keep = (a: number) => inRanges(filter?.casdu, Math.floor(a / IOA_SPAN)) && inRanges(filter?.ioa, a % IOA_SPAN);
  const types = filter?.types;
  return {
    cancel: () => void (cancelled = true),
    next: async () => {
      // one request at a time, after what is ready to run (on a thread shared with live batches,
      // measured at 5,000 points/s: their p99 1.55x a run without an interrogation without this
      // turn, 1.2-1.35x with it, at no cost in the interrogation's time)
      await turn();
      if (addresses === undefined) {
        const found = await findAddresses(redis, patternOf(filter), () => cancelled, collect, COLLECT_EVERY, keep, o.sort);
        if (found === null) return null;
        // what the scan left (its replies' keys) goes before the values are read
        collect?.();
        addresses = found;
        fetchMore();
      }
      while (ready.length < maxSize && ahead.length > 0) {
        const values = await ahead.shift()!;
        fetchMore();
        for (const v of values) {
          if (v === null || v === undefined) continue; // deleted since SCAN
          // checked as bytes, as JSON.parse would (jsonBytes.ts): no string, no objects
          const scan = scanPoint(v, types !== undefined);
          if (!scan.object) continue;
          if (types !== undefined && (scan.type === undefined || !inRanges(types, scan.type))) continue;
          ready.push(scan.notUtf8 ? Buffer.from(v.toString('utf8'), 'utf8') : v);
        }
      }
      if (ready.length === 0) return null;
      const out = ready.length <= maxSize ? ready : ready.slice(0, maxSize);
      ready = ready.length <= maxSize ? [] : ready.slice(maxSize);
      return out;
    },
  };
};
