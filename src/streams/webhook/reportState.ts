import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { defer, type Observable } from 'rxjs';
import type { ReportSettings } from '../../config/reportSettings';
import { filterForShow, reportForShow, type PointFilter } from '../../config/webhookSettings';
import { batchesKey, reportedKey, reportedPattern } from '../../mapping/keys';
import type { DecodedEntry } from '../read/entries';
import { persist } from '../store/persist';
import { matches } from './filter';
import { candidateOf, decide, decodeReported, encodePart, encodeReported, type Candidate, type Reported } from './report';
import type { WebhookSubscription } from './subscription';

/**
 * Where report by exception keeps its state, and how a batch's decision is written (CONTRACT 4.8).
 *
 * Layout: `connectors:{ID}:reported:{N}` (N the webhook's index) is a hash with one field per point
 * reported to the webhook, `{casdu}:{ioa}` → `{stream ID}\n{value}\n{other fields}` (`report.ts`,
 * `encodeReported`), and the field `~`: a digest of the webhook's whole `url`, `filter` and
 * `report`, the settings the state was built under. A digest that is not the webhook's means
 * another configuration built it: the hash is emptied (every point's next entry is reported).
 *
 * Invariants (each has a test in test/streams.reportState.test.ts or the report process tests):
 * 1. A batch's decision for every webhook with `report` and the batch's record (4.3) are written by
 *    one script, in one round trip: both or neither. The record holds each webhook's part (its
 *    webhook-id and which matching entries it holds) or, with nothing reportable, its done mark.
 * 2. The script writes only if every such webhook's records of the batch's points are still those
 *    the process decided against (their SHA-1 compared in Redis); otherwise it writes nothing and
 *    answers those records, and the process decides again. So batches recorded by replicas at the
 *    same time are decided in the order they are recorded, each against the state the ones
 *    before it left.
 * 3. The process's copy of a state changes only after its write landed, or to what Redis answered.
 * 4. At start each webhook's state is loaded, or emptied when its digest differs; the state of a
 *    webhook without `report`, or of an index no longer configured, is deleted.
 */

/** The field of the settings' digest; a point's field always holds a colon. */
const DIGEST_FIELD = '~';
/** Arguments per command a script sends (Lua's `unpack` stops a little under 8,000). */
const CHUNK = 1000;

export const RECORD_SCRIPT = `
local function chunked(cmd, key, list, from, to)
  local out = {}
  local i = from
  while i <= to do
    local j = math.min(to, i + ${CHUNK} - 1)
    local r = redis.call(cmd, key, unpack(list, i, j))
    if type(r) == 'table' then for _, v in ipairs(r) do out[#out + 1] = v end end
    i = j + 1
  end
  return out
end
if redis.call('HMGET', KEYS[1], ARGV[1])[1] then return 0 end
local nf = tonumber(ARGV[3])
local i = 4 + 2 * nf
local np = tonumber(ARGV[i])
local fields = { '${DIGEST_FIELD}' }
for j = 1, np do fields[j + 1] = ARGV[i + j] end
i = i + 1 + np
local conflicts = {}
local starts = {}
for w = 1, #KEYS - 1 do
  local key = KEYS[w + 1]
  local digest, sha, nw = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  starts[w] = { i + 3, nw }
  local vals = chunked('HMGET', key, fields, 1, #fields)
  if vals[1] ~= digest then
    redis.call('DEL', key)
    redis.call('HSET', key, '${DIGEST_FIELD}', digest)
    conflicts[#conflicts + 1] = { w, 'reset' }
  else
    local got = {}
    for j = 2, #vals do got[j - 1] = vals[j] or '' end
    if redis.sha1hex(table.concat(got, '\\n')) ~= sha then conflicts[#conflicts + 1] = { w, 'changed', got } end
  end
  i = i + 3 + 2 * nw
end
if #conflicts > 0 then return conflicts end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if nf > 0 then chunked('HSET', KEYS[1], ARGV, 4, 3 + 2 * nf) end
for w = 1, #KEYS - 1 do
  local s = starts[w]
  if s[2] > 0 then chunked('HSET', KEYS[w + 1], ARGV, s[1], s[1] + 2 * s[2] - 1) end
end
return 1
`;

/** A webhook with `report`, as the state knows it. */
export interface Reporting {
  readonly index: number;
  readonly key: string;
  readonly host: string;
  readonly report: ReportSettings;
  readonly filter?: PointFilter;
  /** The digest of its whole url, filter and report. */
  readonly digest: string;
}

export const reportingOf = (subscriptions: readonly WebhookSubscription[]): Reporting[] =>
  subscriptions.flatMap((s) => {
    const { url, filter, report } = s.webhook;
    if (report === undefined) return [];
    const digest = createHash('sha1').update(JSON.stringify([url, filter === undefined ? null : filterForShow(filter), reportForShow(report)])).digest('hex').slice(0, 16);
    return [{ index: s.index, key: s.key, host: s.host, report, ...(filter !== undefined ? { filter } : {}), digest }];
  });

/** What a webhook with `report` gets of a new batch: its part's record (`encodePart`), or nothing (null). */
export type ReportParts = ReadonlyMap<string, string | null>;

export interface ReportState {
  /** Invariant 4; completes once done (retried while the data store is away). */
  load(): Observable<void>;
  /**
   * Decides the batch of `entries` for every webhook with `report` and records the batch (with
   * `parts`, the filtered webhooks' webhook-ids, as `DeliveryState.record`), atomically; gives each
   * reporting webhook's part by its key. Retried until it lands; a batch whose record landed
   * before (an answer lost) gets the parts recorded then.
   */
  record(entries: readonly DecodedEntry[], parts: ReadonlyArray<readonly [string, string]>): Observable<ReportParts>;
}

export interface ReportObserver {
  onReset(w: Reporting, fields: number): void;
  onDecided(w: Reporting, suppressed: number): void;
  onWriteError(err: unknown): void;
}

type Conflict = [number, 'reset'] | [number, 'changed', string[]];

const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');

export const redisReportState = (redis: Redis, connectorId: string, retryMs: number, reporting: readonly Reporting[], observer: ReportObserver): ReportState => {
  /** Per reporting webhook, the stored records by point (invariant 3). */
  const copies = reporting.map(() => new Map<string, string>());
  const lookup = (copy: Map<string, string>) => (point: string): Reported | undefined => {
    const raw = copy.get(point);
    return raw === undefined ? undefined : decodeReported(raw);
  };
  const keyOf = (w: Reporting) => reportedKey(connectorId, w.index);

  const loadOne = async (w: Reporting, copy: Map<string, string>) => {
    const hash = await redis.hgetall(keyOf(w));
    copy.clear();
    if (hash[DIGEST_FIELD] !== w.digest) {
      const fields = Object.keys(hash).length;
      await redis.multi().del(keyOf(w)).hset(keyOf(w), DIGEST_FIELD, w.digest).exec();
      if (fields > 0) observer.onReset(w, fields - (hash[DIGEST_FIELD] === undefined ? 0 : 1));
      return;
    }
    for (const [field, value] of Object.entries(hash)) if (field !== DIGEST_FIELD) copy.set(field, value);
  };

  const deleteOthers = async () => {
    const keep = new Set(reporting.map(keyOf));
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', reportedPattern(connectorId), 'COUNT', 1000);
      const gone = keys.filter((k) => !keep.has(k));
      if (gone.length > 0) await redis.del(...gone);
      cursor = next;
    } while (cursor !== '0');
  };

  const attempt = async (entries: readonly DecodedEntry[], candidates: readonly Candidate[], parts: ReadonlyArray<readonly [string, string]>) => {
    const points = [...new Set(candidates.map((c) => c.point))];
    const first = entries[0]!.id;
    const decided = reporting.map((w, n) => {
      const copy = copies[n]!;
      const d = decide(w.report, w.filter, lookup(copy), candidates);
      const writes = [...d.writes].flatMap(([p, r]) => [p, encodeReported(r)]);
      const expected = sha1(points.map((p) => copy.get(p) ?? '').join('\n'));
      return { w, d, writes, expected };
    });
    const fields: string[] = parts.flatMap(([k, id]) => [`${first}#${k}`, id]);
    const result = new Map<string, string | null>();
    for (const { w, d } of decided) {
      if (d.reported.length === 0) {
        // nothing to send: delivered to it (CONTRACT 4.5), marked with the record
        fields.push(`${first}|${w.key}`, '1');
        result.set(w.key, null);
      } else {
        const matching = w.filter === undefined ? candidates : candidates.filter((c) => matches(w.filter!, c.entry));
        const value = encodePart(matching.map((c) => c.id), d.reported.map((c) => c.id));
        fields.push(`${first}#${w.key}`, value);
        result.set(w.key, value);
      }
    }
    const args = [first, entries[entries.length - 1]!.id, String(fields.length / 2), ...fields, String(points.length), ...points];
    for (const { w, writes, expected } of decided) args.push(w.digest, expected, String(writes.length / 2), ...writes);
    const answer = (await redis.eval(RECORD_SCRIPT, reporting.length + 1, batchesKey(connectorId), ...reporting.map(keyOf), ...args)) as 0 | 1 | Conflict[];
    if (answer === 0) return recorded(first);
    if (answer === 1) {
      decided.forEach(({ w, d, writes }, n) => {
        const copy = copies[n]!;
        for (let i = 0; i < writes.length; i += 2) copy.set(writes[i]!, writes[i + 1]!);
        observer.onDecided(w, d.suppressed);
      });
      return result;
    }
    // invariant 2: decided against records Redis no longer holds; take Redis's and decide again
    for (const c of answer) {
      const copy = copies[c[0] - 1]!;
      if (c[1] === 'reset') copy.clear();
      else c[2].forEach((raw, j) => (raw === '' ? copy.delete(points[j]!) : copy.set(points[j]!, raw)));
    }
    return undefined;
  };

  /**
   * The parts a batch's record holds (it landed, and its answer was lost): those are what its
   * webhooks get. The copies may now be behind Redis: the next batch of those points conflicts and
   * takes Redis's records (invariant 2).
   */
  const recorded = async (first: string): Promise<ReadonlyMap<string, string | null>> => {
    const names = reporting.flatMap((w) => [`${first}#${w.key}`, `${first}|${w.key}`]);
    const values = await redis.hmget(batchesKey(connectorId), ...names);
    // neither: recorded when it had no report (it gets every entry its filter matches)
    return new Map<string, string | null>(reporting.flatMap((w, n): Array<[string, string | null]> => (values[2 * n] !== null ? [[w.key, values[2 * n]!]] : values[2 * n + 1] !== null ? [[w.key, null]] : [])));
  };

  return {
    load: () =>
      persist(retryMs, async () => {
        await Promise.all(reporting.map((w, n) => loadOne(w, copies[n]!)));
        await deleteOthers();
      }, observer.onWriteError),
    record: (entries, parts) => {
      const candidates = entries.map((e) => candidateOf(e));
      return persist(retryMs, async () => {
        for (;;) {
          const r = await attempt(entries, candidates, parts);
          if (r !== undefined) return r;
        }
      }, observer.onWriteError);
    },
  };
};
