import * as E from 'fp-ts/Either';
import type { ServerResponse } from 'node:http';
import type { DataRoute } from '../app/app';
import type { Redis } from 'ioredis';
import { processImageKey } from '../../mapping/keys';
import type { Logger } from 'pino';
import type { Metrics } from '../../telemetry/metrics';
import { decodeAddressQuery, scanPattern } from './query';
import { IOA_SPAN, keyOf } from '../../streams/image/address';
import { inRanges } from '../../streams/webhook/filter';
import type { RequestContext } from '../app/app';
import { COLLECT_EVERY, findAddresses, isJsonObjectText } from '../../streams/image/image';
import { parseRawQuery } from '../app/query';
import { NOT_CONNECTED, sendError, sendJsonText, sendProblem } from '../app/problem';

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

/** Bytes (UTF-16 code units) gathered before a write of a streamed response. */
const WRITE_BYTES = 1 << 20;
/** Keys of the first MGET of a streamed GET, and the value bytes each later one aims at. */
const FIRST_CHUNK = 100;
const CHUNK_BYTES = 4 << 20;

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
  { method: 'get', path: '/api/datapoints', handler: async (req, res, ctx) => {
    const collectEvery = d.collectEvery ?? COLLECT_EVERY;
    // CONTRACT 7.2: with callers set, the casdus this caller may read (none granted: no read at all)
    const readable = ctx.grant === undefined ? undefined : ctx.grant.casdu ?? null;
    if (readable === null) return ctx.forbid(`caller '${ctx.caller}' may not read data points`);
    const filter = decodeAddressQuery(parseRawQuery(req.url ?? ''));
    if (E.isLeft(filter)) {
      sendError(res, 400, filter.left.code, filter.left.message);
      return;
    }
    if (readable !== undefined && filter.right.casdu !== undefined && !inRanges(readable, filter.right.casdu)) {
      return ctx.forbid(`caller '${ctx.caller}' may not read casdu ${filter.right.casdu}`);
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
      addresses = await findAddresses(d.redis, scanPattern(f), () => left || !res.writable, d.collect, collectEvery);
      if (addresses === null) return;
      // a read of several casdus keeps only those granted, before any value is fetched
      if (readable !== undefined && f.casdu === undefined) addresses = addresses.filter((a) => inRanges(readable, Math.floor(a / IOA_SPAN)));
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

/** CONTRACT 7.2: whether the caller may operate the webhooks; when it may not, it has been answered 403. */
const operates = (ctx: RequestContext): boolean => {
  if (ctx.grant === undefined || ctx.grant.operate) return true;
  ctx.forbid(`caller '${ctx.caller}' may not operate the webhooks`);
  return false;
};

/** CONTRACT 4.4: `GET /api/webhooks`, the delivery status of every configured webhook. */
export const webhooksRoute = (board: () => readonly object[]): DataRoute => ({
  method: 'get',
  path: '/api/webhooks',
  handler: (_req, res, ctx) => {
    if (!operates(ctx)) return;
    sendJsonText(res, 200, JSON.stringify({ webhooks: board() }));
  },
});

/**
 * CONTRACT 4.6: `POST /api/webhooks/{index}/interrogation` — 202 queued (this replica performs it),
 * 404 for an index that is not configured, 409 while one is queued or running for that webhook.
 */
export const interrogationRoute = (ask: (index: number) => 'queued' | 'not_found' | 'busy'): DataRoute => ({
  method: 'post',
  path: '/api/webhooks/:index/interrogation',
  handler: (req, res, ctx) => {
    if (!operates(ctx)) return;
    const m = /^\/api\/webhooks\/([^/?]*)\/interrogation\/?(?:\?|$)/i.exec(req.url ?? '');
    const raw = m?.[1] ?? '';
    const index = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : -1;
    const answer = index < 0 ? 'not_found' : ask(index);
    if (answer === 'queued') sendJsonText(res, 202, JSON.stringify({ webhook: index, state: 'queued' }));
    else if (answer === 'busy') sendProblem(res, 409, `an interrogation of webhook ${index} is already queued or running`);
    else sendProblem(res, 404, `no webhook ${index >= 0 ? index : JSON.stringify(raw.slice(0, 40))} is configured`);
  },
});
