/**
 * The bare pipeline of push-formats (CONTRACT 4.7 "Cost"): the job the outbound connector does, as
 * plainly as it can be done with the same libraries, fixed before any run is measured against it.
 * It reads `process:updates` in a consumer group (`XREADGROUP … BLOCK`), batches as the connector
 * does by default (a batch closes 100 ms after it opened or at 1,000 points), renders each batch once
 * in the format named (`datapoints`, `ndjson`, `influx-line`, `influx-line+gzip`, `jsonata`: the
 * `jsonata` library on this thread, zlib's `gzipSync`, a plain line-protocol encoder), POSTs the same
 * bytes, as a Buffer, with axios on keep-alive agents to every receiver (at most 4 batches in flight,
 * as the connector's `MaxInFlight`), and acknowledges a batch's entries once every receiver answered.
 * What it leaves out is what the contract adds: retries, backlog, records, status, metrics, logs.
 *
 * BARE_CONTRACT=1 (push-formats with BENCH_FLOOR=1; informational, not the target's baseline): the
 * same, plus only the writes and checks CONTRACT 4.2/4.3 make every connector do, plainly — each
 * entry's `data` parsed and checked to be an object (one that is not is acknowledged on its own,
 * not sent), the batch recorded (`HSET`) before it goes out, each webhook's 2xx but the last
 * recorded as it comes (`HSET`), and the acknowledgement with the record's deletion in one
 * `MULTI`. What ours costs above this is what our code adds beyond the mandated work.
 *
 * argv: redis port, format, receiver URLs…; sends 'ready' once its group exists.
 */
import axios from 'axios';
import jsonata from 'jsonata';
import { Agent } from 'node:http';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';

const [redisPort, format, ...urls] = process.argv.slice(2) as [string, string, ...string[]];
const redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', protocol: 2 });
const client = axios.create({
  httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }), timeout: 10000, validateStatus: () => true,
  transformRequest: [(d: unknown) => d], transformResponse: [(d: unknown) => d], decompress: false, proxy: false, maxRedirects: 0,
});
const GROUP = 'bare';
const WINDOW_MS = 100;
const MAX_POINTS = 1000;
const MAX_IN_FLIGHT = 4;
const RECORDS = process.env.BARE_JSONATA ?? '';
const expression = format === 'jsonata' ? jsonata(RECORDS) : undefined;
const CONTRACT = process.env.BARE_CONTRACT === '1';
const RECORDS_KEY = 'connectors:bare:batches';
let stopping = false;
process.on('SIGTERM', () => (stopping = true));

/** Line protocol, plainly: tags casdu, ioa, source, type; value; the other numeric fields; the timestamp in ns. */
const escapeTag = (s: string) => (/[ ,=\\]/.test(s) ? s.replace(/[ ,=]/g, '\\$&') : s);
const line = (p: Record<string, unknown>): string => {
  let fields = `value=${String(p.value)}`;
  for (const k in p) {
    if (k === 'casdu' || k === 'ioa' || k === 'source' || k === 'type' || k === 'value' || k === 'timestamp') continue;
    const v = p[k];
    if (typeof v === 'number') fields += `,${k}=${v}`;
    else if (typeof v === 'string') fields += `,${k}="${v.replace(/["\\]/g, '\\$&')}"`;
    else if (typeof v === 'boolean') fields += `,${k}=${v}`;
  }
  return `bench,casdu=${String(p.casdu)},ioa=${String(p.ioa)},source=${escapeTag(String(p.source))},type=${String(p.type)} ${fields} ${Date.parse(String(p.timestamp))}000000\n`;
};

/** The batch's body and content type, rendered once. */
const render = async (points: string[]): Promise<{ body: Buffer; type: string; gzip: boolean }> => {
  switch (format) {
    case 'datapoints':
      return { body: Buffer.from(`{"datapoints":[${points.join(',')}]}`), type: 'application/json', gzip: false };
    case 'ndjson':
      return { body: Buffer.from(`${points.join('\n')}\n`), type: 'application/x-ndjson', gzip: false };
    case 'influx-line':
    case 'influx-line+gzip': {
      let text = '';
      for (const p of JSON.parse(`[${points.join(',')}]`) as Array<Record<string, unknown>>) text += line(p);
      const bytes = Buffer.from(text);
      return format === 'influx-line' ? { body: bytes, type: 'text/plain; charset=utf-8', gzip: false } : { body: gzipSync(bytes), type: 'text/plain; charset=utf-8', gzip: true };
    }
    case 'jsonata':
      return { body: Buffer.from(JSON.stringify(await expression!.evaluate(JSON.parse(`{"datapoints":[${points.join(',')}]}`)))), type: 'application/json', gzip: false };
    default:
      throw new Error(`unknown format ${format}`);
  }
};

let inFlight = 0;
const waiting: Array<() => void> = [];
const slot = async () => {
  while (inFlight >= MAX_IN_FLIGHT) await new Promise<void>((r) => waiting.push(r));
  inFlight++;
};
const free = () => {
  inFlight--;
  waiting.shift()?.();
};

const flush = async (ids: string[], points: string[]) => {
  await slot();
  try {
    const { body, type, gzip } = await render(points);
    const headers = { 'Content-Type': type, 'webhook-id': `${ids[0]}_${ids[ids.length - 1]}`, ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) };
    if (!CONTRACT) {
      await Promise.all(urls.map((u) => client.post(u, body, { headers }).catch(() => undefined)));
      await redis.xack('process:updates', GROUP, ...ids);
      return;
    }
    const first = ids[0]!;
    await redis.hset(RECORDS_KEY, first, ids[ids.length - 1]!);
    let answered = 0;
    await Promise.all(urls.map((u, k) => client.post(u, body, { headers }).catch(() => undefined).then(async () => {
      if (++answered < urls.length) await redis.hset(RECORDS_KEY, `${first}|${k}`, '1');
    })));
    await redis.multi().xack('process:updates', GROUP, ...ids).hdel(RECORDS_KEY, first, ...urls.map((_, k) => `${first}|${k}`)).exec();
  } finally {
    free();
  }
};

(async () => {
  await redis.xgroup('CREATE', 'process:updates', GROUP, '$', 'MKSTREAM').catch(() => undefined);
  process.send?.('ready');
  let ids: string[] = [];
  let points: string[] = [];
  let opened = 0;
  const close = () => {
    if (ids.length === 0) return;
    void flush(ids, points);
    ids = [];
    points = [];
  };
  while (!stopping) {
    const wait = ids.length === 0 ? 500 : Math.max(1, opened + WINDOW_MS - Date.now());
    const reply = (await redis.xreadgroup('GROUP', GROUP, 'bare-1', 'COUNT', MAX_POINTS, 'BLOCK', wait, 'STREAMS', 'process:updates', '>')) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [id, f] of reply?.[0]?.[1] ?? []) {
      const data = f[f.indexOf('data') + 1]!;
      if (CONTRACT) {
        let p: unknown;
        try {
          p = JSON.parse(data);
        } catch {
          p = null;
        }
        if (p === null || typeof p !== 'object' || Array.isArray(p)) {
          void redis.xack('process:updates', GROUP, id);
          continue;
        }
        // (the connector fills casdu, ioa and source from the entry's fields where data lacks them)
        if (!('casdu' in p) || !('ioa' in p) || !('source' in p)) throw new Error('the bench writes complete points');
      }
      if (ids.length === 0) opened = Date.now();
      ids.push(id);
      points.push(data);
      if (ids.length >= MAX_POINTS) close();
    }
    if (ids.length > 0 && Date.now() >= opened + WINDOW_MS) close();
  }
  redis.disconnect();
  process.exit(0);
})();
