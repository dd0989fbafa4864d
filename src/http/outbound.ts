import * as E from 'fp-ts/Either';
import type { ServerResponse } from 'node:http';
import type { DataRoute } from './app';
import type { Redis } from 'ioredis';
import { processImageKey } from '../mapping/keys';
import type { Logger } from 'pino';
import type { Metrics } from './metrics';
import { decodePointFilter, imageAddress, scanPattern, type PointFilter } from './outboundQuery';
import { parseRawQuery } from './query';
import { NOT_CONNECTED, sendError, sendJsonText, sendProblem } from './problem';

export interface OutboundDeps {
  readonly redis: Redis;
  readonly isConnected: () => boolean;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Keys per MGET, and MGETs in flight ahead of the one being written. */
  readonly chunkSize?: number;
  readonly chunksAhead?: number;
  /** How long a client may leave a streamed response unread before it is cut off. */
  readonly writeTimeoutMs?: number;
  /**
   * Asks for a full garbage collection, run alongside (src/runtime/collector.ts): called every
   * COLLECT_EVERY keys a GET scans and at the end of such a large response.
   */
  readonly collect?: () => void;
  /** Keys scanned between two calls of `collect` (COLLECT_EVERY unless a test says otherwise). */
  readonly collectEvery?: number;
}

/**
 * Keys Redis looks at per SCAN: small replies (measured on a GET of 1,000,000 points, before
 * `collect` was added: peak RSS growth 106–110 MB with 10000, 61–72 MB with 1000, at about the
 * same speed).
 */
const SCAN_COUNT = 1000;
/** Bytes (UTF-16 code units) gathered before a write of a streamed response. */
const WRITE_BYTES = 1 << 20;
/** Keys of the first MGET of a streamed GET, and the value bytes each later one aims at. */
const FIRST_CHUNK = 100;
const CHUNK_BYTES = 4 << 20;
/** Keys scanned between two requests for a full collection (see `OutboundDeps.collect`). */
const COLLECT_EVERY = 200_000;

/**
 * Addresses of the keys matching the filter, as one number each (casdu × 2^24 + ioa: exact, and
 * ordered by casdu, then ioa), sorted and deduplicated (SCAN may repeat a key). Numbers, not key
 * strings, are what memory holds for the length of the response: 8 bytes a point.
 */
const findAddresses = async (
  redis: Redis, f: PointFilter, gone: () => boolean, collect: (() => void) | undefined, every: number,
): Promise<Float64Array | null> => {
  const pattern = scanPattern(f);
  // a typed array that doubles as it fills: 8 bytes a point and no boxed numbers
  let found = new Float64Array(4096);
  let n = 0;
  let scanned = 0;
  let cursor = '0';
  do {
    // a client that left gets no more scanning (CONTRACT 6.5): its SCAN would only load Redis
    if (gone()) return null;
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    for (const key of keys) {
      const addr = imageAddress(key);
      if (addr < 0) continue;
      if (n === found.length) {
        const bigger = new Float64Array(found.length * 2);
        bigger.set(found);
        found = bigger;
      }
      found[n++] = addr;
    }
    if (collect !== undefined && Math.floor((scanned + keys.length) / every) > Math.floor(scanned / every)) collect();
    scanned += keys.length;
    cursor = next;
  } while (cursor !== '0');
  const sorted = found.subarray(0, n).sort();
  let unique = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[unique++] = sorted[i]!;
  return sorted.subarray(0, unique);
};

const IOA_SPAN = 16777216;
const keyOf = (address: number): string => processImageKey(Math.floor(address / IOA_SPAN), address % IOA_SPAN);

/** A stored value goes out as stored (unknown fields kept) when it is a JSON object. */
const isJsonObjectText = (text: string): boolean => {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
};

/**
 * Writes a chunk, waiting for the client to take the previous ones; a client that stops reading
 * for `timeoutMs` is cut off (CONTRACT 6.5), so it cannot hold the response's memory for ever.
 */
const write = (res: ServerResponse, chunk: string, timeoutMs: number): Promise<void> =>
  res.write(chunk) ? Promise.resolve() : new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      res.destroy();
      reject(new Error('client stopped reading'));
    }, timeoutMs);
    const onDrain = () => { clearTimeout(timer); res.off('close', onClose); resolve(); };
    const onClose = () => { clearTimeout(timer); res.off('drain', onDrain); reject(new Error('client went away')); };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });

/**
 * Streams `{"datapoints":[…]}` chunk by chunk: memory holds the addresses and a few chunks of
 * values, never all values. A failure after the head was sent aborts the response, so a
 * client never takes a truncated list for a complete one.
 */
const streamPoints = async (d: OutboundDeps, res: ServerResponse, addresses: Float64Array, collectEvery: number): Promise<void> => {
  const maxSize = d.chunkSize ?? 1000;
  const ahead = d.chunksAhead ?? 4;
  // Chunks follow the values' size: the first is small, the next hold about CHUNK_BYTES, so that
  // one MGET of very large values neither takes longer than the command deadline nor fills memory
  let size = Math.min(FIRST_CHUNK, maxSize);
  let next = 0;
  const fetches: Array<{ from: number; values: Promise<Array<string | null>> }> = [];
  const fetchMore = (limit: number) => {
    while (fetches.length < limit && next < addresses.length) {
      const from = next;
      next = Math.min(addresses.length, next + size);
      const values = d.redis.mget(...Array.from(addresses.subarray(from, next), keyOf));
      values.catch(() => undefined); // observed when awaited below; this only prevents an unhandled rejection
      fetches.push({ from, values });
    }
  };
  fetchMore(1); // the others once the first tells how large values are
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  let first = true;
  let count = 0;
  let skipped = 0;
  const skippedKeys: string[] = [];
  let out = '{"datapoints":[';
  while (fetches.length > 0) {
    const chunk = fetches.shift()!;
    const values = await chunk.values;
    let bytes = 0;
    for (const v of values) bytes += v?.length ?? 0;
    size = Math.max(1, Math.min(maxSize, Math.floor(CHUNK_BYTES / Math.max(1, bytes / Math.max(1, values.length)))));
    fetchMore(ahead);
    for (let j = 0; j < values.length; j++) {
      const v = values[j];
      if (v === null || v === undefined) continue; // deleted since SCAN
      if (!isJsonObjectText(v)) {
        if (skipped < 5) skippedKeys.push(keyOf(addresses[chunk.from + j]!));
        skipped++;
        continue;
      }
      const item = first ? v : `,${v}`;
      first = false;
      count++;
      // written at WRITE_BYTES: a chunk's values together may exceed the longest string V8 can
      // hold (~512 MiB), one value alone never does
      if (out.length + item.length > WRITE_BYTES && out.length > 0) {
        await write(res, out, d.writeTimeoutMs ?? 30000);
        out = '';
      }
      out += item;
    }
    await write(res, out, d.writeTimeoutMs ?? 30000);
    out = '';
  }
  res.end(`${out}]}`);
  // what such a response left behind goes now, not into the next one's peak
  if (addresses.length >= collectEvery) d.collect?.();
  d.metrics.getPoints.inc(count);
  if (skipped > 0) {
    d.metrics.getSkipped.inc(skipped);
    // one line per request, however many (CONTRACT 6.5: no log flood from stored data)
    d.log.warn({ count: skipped, keys: skippedKeys }, 'stored values that are not JSON objects were left out');
  }
};

export const outboundRoutes = (d: OutboundDeps): DataRoute[] => [
  { method: 'get', path: '/api/datapoints', handler: async (req, res) => {
    const collectEvery = d.collectEvery ?? COLLECT_EVERY;
    const filter = decodePointFilter(parseRawQuery(req.url ?? ''));
    if (E.isLeft(filter)) {
      sendError(res, 400, filter.left.code, filter.left.message);
      return;
    }
    if (!d.isConnected()) {
      sendProblem(res, 503, NOT_CONNECTED);
      return;
    }
    if (req.method === 'HEAD') {
      // the same status and headers as a GET, without reading a key
      res.statusCode = 200;
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.end();
      return;
    }
    let left = false;
    res.once('close', () => (left = true));
    const f = filter.right;
    let addresses: Float64Array | null;
    try {
      if (f.casdu !== undefined && f.ioa !== undefined) {
        const key = processImageKey(f.casdu, f.ioa);
        // a key of another type (a foreign writer's) is a stored value that is not a JSON object,
        // not a data store failure (CONTRACT 4.1, 6.5)
        const value = await d.redis.get(key).catch((err: Error) => {
          if (/WRONGTYPE/.test(err.message)) return `(${err.message})`;
          throw err;
        });
        const ok = value !== null && isJsonObjectText(value);
        if (ok) d.metrics.getPoints.inc();
        else if (value !== null) {
          d.metrics.getSkipped.inc();
          d.log.warn({ key }, 'stored value is not a JSON object; left out');
        }
        sendJsonText(res, 200, ok ? `{"datapoints":[${value}]}` : '{"datapoints":[]}');
        return;
      }
      addresses = await findAddresses(d.redis, f, () => left || !res.writable, d.collect, collectEvery);
      if (addresses === null) return;
    } catch (err) {
      d.log.warn({ err: (err as Error).message }, 'reading data points failed');
      sendProblem(res, 503, NOT_CONNECTED);
      return;
    }
    try {
      await streamPoints(d, res, addresses, collectEvery);
    } catch (err) {
      const message = (err as Error).message;
      if (message === 'client stopped reading' || message === 'client went away') {
        d.log.info({ reason: message }, 'response cut off: the client stopped reading or left');
        res.destroy();
        return;
      }
      d.log.error({ err: message }, 'data store failed while streaming; response aborted');
      if (res.headersSent) res.destroy();
      else sendProblem(res, 503, NOT_CONNECTED);
    }
  } },
];

/** CONTRACT 4.4: `GET /api/webhooks`, the delivery status of every configured webhook. */
export const webhooksRoute = (board: () => readonly object[]): DataRoute => ({
  method: 'get',
  path: '/api/webhooks',
  handler: (_req, res) => {
    sendJsonText(res, 200, JSON.stringify({ webhooks: board() }));
  },
});
