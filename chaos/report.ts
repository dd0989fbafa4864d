/**
 * The chaos run's `report` receiver (CONTRACT 4.8, issue 48): a webhook whose filter takes CASDU 14
 * only, with a deadband on the floats and `maxSilenceSeconds`. A producer of its own appends, beside
 * the run's numbered entries, slow noisy floats of a few dozen points to that CASDU (each entry
 * marked by its `timestamp`, `r{n}`, which 4.8 does not compare), through every fault. After the
 * run, against the entries `process:updates` holds:
 *
 * - `forbidden`: reported entries (first copies of each webhook-id) that the rules forbid, given the
 *   entry reported before them of the same point (by stream ID) — 0 under every fault;
 * - `missingQuiet`, `extraQuiet`: in the quiet tail, after the faults, once a killed replica's
 *   entries can no longer be claimed (one consumer), the entries a stream-order reader applying 4.8
 *   reports from the state reported before the tail, and the receiver did not get — or got and the
 *   reader would not report — both 0;
 * - `unknown`: reported points that are no entry of the stream (0).
 *
 * The shared checks of the run (no id with two contents, nothing outside the filter) apply to it as
 * to every receiver.
 */
import { Redis } from 'ioredis';
import { allowed, pointKey, reference } from '../support/reportReference';

export const REPORT_CASDU = 14;
export const REPORT_SETTINGS = { deadband: [{ absolute: 0.5 }], maxSilenceSeconds: 5 };
const POINTS = 40;
const RATE = Number(process.env.CHAOS_REPORT_RATE ?? 100);
const BURST_MS = 500;

type Entry = { readonly id: string; readonly point: Record<string, unknown> };

/** Entry n: point n mod 40, a sine over 20 s of amplitude 3 with ±0.2 of noise; one in 211 with quality bad. */
const pointOf = (n: number, t: number): string => {
  const ioa = n % POINTS;
  const value = Math.round((50 + 3 * Math.sin((2 * Math.PI * t) / 20000 + ioa) + (((n * 7919) % 41) - 20) / 100) * 100) / 100;
  return JSON.stringify({ casdu: REPORT_CASDU, ioa, type: 36, value, quality: n % 211 === 0 ? 'bad' : 'good', timestamp: `r${n}` });
};

/**
 * Appends RATE entries a second, in bursts every BURST_MS, until `producing()` is false. A write
 * that fails (Redis killed, out of memory, away) is not tried again: its marker is never used
 * twice, so the stream, read after the run, is what was written.
 *
 * Bursts: entries every 10 ms made a batch of every 100 ms window for every webhook, in the quiet
 * tail too — ten batches a second, more than the slow receiver (200–1500 ms an answer, four at a
 * time) takes; its queue filled and the batches of a killed replica, claimed a minute into the
 * tail, waited in its backlog behind a thousand others past the end of the run (seed 2202, twice).
 */
export const produceReport = async (redisPort: number, producing: () => boolean): Promise<number> => {
  const redis = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 200 });
  redis.on('error', () => undefined);
  const start = Date.now();
  let n = 0;
  while (producing()) {
    const due = Math.floor(((Date.now() - start) / 1000) * RATE);
    const pipe = redis.pipeline();
    for (; n < due; n++) pipe.xadd('process:updates', '*', 'casdu', String(REPORT_CASDU), 'ioa', String(n % POINTS), 'source', 'chaos', 'data', pointOf(n, Date.now()));
    await pipe.exec().catch(() => undefined);
    await new Promise((r) => setTimeout(r, BURST_MS));
  }
  redis.disconnect();
  return n;
};

/** The CASDU-14 entries of the stream, in order. */
const readEntries = async (redis: Redis): Promise<Entry[]> => {
  const out: Entry[] = [];
  let from = '-';
  for (;;) {
    const page = (await redis.xrange('process:updates', from, '+', 'COUNT', 10000)) as Array<[string, string[]]>;
    for (const [id, fields] of page) {
      if (fields[fields.indexOf('casdu') + 1] !== String(REPORT_CASDU)) continue;
      out.push({ id, point: JSON.parse(fields[fields.indexOf('data') + 1]!) as Record<string, unknown> });
    }
    if (page.length < 10000) return out;
    from = `(${page[page.length - 1]![0]}`;
  }
};

const ms = (id: string) => Number(id.split('-')[0]);

/** The checks above; `received` the points of the receiver's first copies, `quietFrom` the tail's start (ms). */
export const checkReport = async (redis: Redis, received: ReadonlyArray<Record<string, unknown>>, quietFrom: number) => {
  const entries = await readEntries(redis);
  const byMarker = new Map(entries.map((e) => [String(e.point.timestamp), e]));
  const reportedEntries = [...new Set(received.map((p) => String(p.timestamp)))].map((m) => byMarker.get(m));
  const unknown = reportedEntries.filter((e) => e === undefined).length;
  const reported = reportedEntries.filter((e): e is Entry => e !== undefined).sort((a, b) => ms(a.id) - ms(b.id) || Number(a.id.split('-')[1]) - Number(b.id.split('-')[1]));
  // every reported entry allowed by the rules against the one reported before it of its point
  const last = new Map<string, Entry>();
  const forbidden: string[] = [];
  for (const e of reported) {
    const l = last.get(pointKey(e.point));
    if (l !== undefined && !allowed(REPORT_SETTINGS, l, e)) forbidden.push(`${l.id}→${e.id}`);
    last.set(pointKey(e.point), e);
  }
  // the quiet tail: a stream-order reader from the state reported before it
  const quiet = entries.filter((e) => ms(e.id) >= quietFrom);
  const start = new Map<string, Entry>();
  for (const e of reported) if (ms(e.id) < quietFrom) start.set(pointKey(e.point), e);
  const expected = new Set(reference(REPORT_SETTINGS, undefined, quiet, start));
  const got = new Set(reported.filter((e) => ms(e.id) >= quietFrom).map((e) => e.id));
  return {
    entries: entries.length, reported: reported.length, unknown, forbidden: forbidden.length, forbiddenExamples: forbidden.slice(0, 3),
    quietEntries: quiet.length, quietExpected: expected.size,
    missingQuiet: [...expected].filter((id) => !got.has(id)).length, extraQuiet: [...got].filter((id) => !expected.has(id)).length,
  };
};
