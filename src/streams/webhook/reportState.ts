import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Observable } from 'rxjs';
import type { ReportSettings } from '../../config/reportSettings';
import { filterForShow, reportForShow, type PointFilter } from '../../config/webhookSettings';
import { batchesKey, reportedKey, reportedPattern } from '../../mapping/keys';
import type { DecodedEntry } from '../read/entries';
import { persist } from '../store/persist';
import { matches } from './filter';
import { candidateOf, decide, decodeReported, encodePart, encodeReported, forgetMemo, type Candidate, type Decision, type Reported } from './report';
import { DIGEST_FIELD, RECORD_SCRIPT, RESET_SCRIPT, type Conflict, type ScriptAnswer } from './reportScript';
import type { WebhookSubscription } from './subscription';

/**
 * Where report by exception keeps its state, and how a batch's decision is written (CONTRACT 4.8).
 *
 * Layout: `connectors:{ID}:reported:{N}` (N the webhook's index) is a hash with one field per point
 * reported to the webhook, `{casdu}:{ioa}` → `{stream ID}\n{value}\n{other fields}` (`report.ts`,
 * `encodeReported`), and the field `~`: `{digest} {version}` — a digest of the webhook's whole
 * `url`, `filter` and `report`, the settings the state was built under, and a counter every write
 * increases (`reportScript.ts`). A digest that is not the webhook's means another configuration
 * built it: the hash is emptied (every point's next entry is reported).
 *
 * Invariants (each has a test in test/streams.reportState.test.ts or the report process tests):
 * 1. A batch's decision for every webhook with `report` and the batch's record (4.3) are written by
 *    one script, in one round trip (`reportScript.ts`): both or neither. The record holds each
 *    webhook's part (its webhook-id and which matching entries it holds) or, with nothing
 *    reportable, its done mark.
 * 2. The script writes only if every such webhook's state is still what the process decided
 *    against: the version in its `~` field is the one the process's copy holds, or — once another
 *    process wrote (a replica) — the batch's points' records are the copy's (their SHA-1 compared in
 *    Redis). Otherwise it writes nothing and answers what moved, and the process decides again. So
 *    batches recorded by replicas at the same time are decided in the order they are recorded,
 *    each against the state the ones before it left.
 * 3. The process's copy of a state changes only after its write landed, or to what Redis answered;
 *    it is trusted whole (the version check alone) only while no other process wrote since it was
 *    read: after another's write, the batch's points are checked, until the copy is read again
 *    (once ten batches in a row saw no other writer).
 * 4. At start each webhook's state is loaded, or emptied when its digest differs; the state of a
 *    webhook without `report`, or of an index no longer configured, is deleted.
 */

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

/**
 * The webhooks with `report`; those with the same filter and report share one settings object each,
 * so that `decide` decides an entry once for all of them (its memo is keyed by the objects).
 */
export const reportingOf = (subscriptions: readonly WebhookSubscription[]): Reporting[] => {
  const shared = new Map<string, Pick<Reporting, 'report' | 'filter'>>();
  return subscriptions.flatMap((s) => {
    const { url, filter, report } = s.webhook;
    if (report === undefined) return [];
    const rules = JSON.stringify([filter === undefined ? null : filterForShow(filter), reportForShow(report)]);
    const same = shared.get(rules) ?? { report, ...(filter !== undefined ? { filter } : {}) };
    shared.set(rules, same);
    const digest = createHash('sha1').update(JSON.stringify([url, rules])).digest('hex').slice(0, 16);
    return [{ index: s.index, key: s.key, host: s.host, ...same, digest }];
  });
};

/**
 * What a webhook with `report` gets of a new batch: its part's record (`encodePart`) — with its
 * entries, when decided now rather than read back — or nothing (null).
 */
export type ReportParts = ReadonlyMap<string, { readonly value: string; readonly entries?: readonly DecodedEntry[] } | null>;

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


const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');

/** After this many batches in a row without another writer, an unsure copy is read again whole. */
const QUIET_BATCHES = 10;

/** One reporting webhook's copy of its state, and how far it is trusted (invariant 3). */
interface Copy {
  readonly records: Map<string, Reported>;
  /** Fields Redis holds that are no record (written by something else): compared as they are, decided as never reported. */
  readonly foreign: Map<string, string>;
  /** The `~` value the copy is current at; undefined: unsure (another process wrote). */
  known: string | undefined;
  /** Unsure: the `~` value this process wrote last, and the batches since another wrote. */
  lastWritten: string | undefined;
  quiet: number;
}

export const redisReportState = (redis: Redis, connectorId: string, retryMs: number, reporting: readonly Reporting[], observer: ReportObserver): ReportState => {
  const copies: Copy[] = reporting.map(() => ({ records: new Map(), foreign: new Map(), known: undefined, lastWritten: undefined, quiet: 0 }));
  /** Records read at one load, by their text: webhooks that hold the same record share one object (as `decide`'s memo wants). */
  let interned = new Map<string, Reported>();
  const keyOf = (w: Reporting) => reportedKey(connectorId, w.index);
  /**
   * Twins (a cost, not a rule): a webhook whose rules are an earlier one's (the same settings
   * objects, `reportingOf`) and whose copy holds the same records (the same objects, nothing
   * foreign) gets that one's decision — five subscribers of one rule set cost one decision. Both then
   * write the same records and stay twins; a load or a conflict pairs them again (undefined: to do).
   */
  let twins: Array<number | undefined> | undefined;
  const sameCopy = (a: Copy, b: Copy): boolean => {
    if (a.foreign.size > 0 || b.foreign.size > 0 || a.records.size !== b.records.size) return false;
    for (const [p, r] of a.records) if (b.records.get(p) !== r) return false;
    return true;
  };
  /** The first earlier webhook each one is a twin of (that one is no twin itself: an earlier twin of it would have been found first). */
  const pairTwins = (): Array<number | undefined> =>
    reporting.map((w, n) => {
      for (let m = 0; m < n; m++) {
        const v = reporting[m]!;
        if (v.report === w.report && v.filter === w.filter && sameCopy(copies[m]!, copies[n]!)) return m;
      }
      return undefined;
    });

  /** Invariant 4: the copy read whole (or the state emptied, when another configuration built it). */
  const loadOne = async (w: Reporting, copy: Copy) => {
    const hash = await redis.hgetall(keyOf(w));
    copy.records.clear();
    copy.foreign.clear();
    copy.quiet = 0;
    copy.lastWritten = undefined;
    twins = undefined;
    const tilde = hash[DIGEST_FIELD];
    if (tilde === undefined || !tilde.startsWith(`${w.digest} `)) {
      // emptied only if no replica of these settings did it first (and wrote since): then read again
      if ((await redis.eval(RESET_SCRIPT, 1, keyOf(w), w.digest)) !== null) return loadOne(w, copy);
      copy.known = `${w.digest} 0`;
      const fields = Object.keys(hash).length;
      if (fields > 0) observer.onReset(w, fields - (tilde === undefined ? 0 : 1));
      return;
    }
    for (const [field, value] of Object.entries(hash)) {
      if (field === DIGEST_FIELD) continue;
      const r = interned.get(value) ?? decodeReported(value);
      if (r === undefined) {
        copy.foreign.set(field, value);
        continue;
      }
      interned.set(value, r);
      copy.records.set(field, r);
    }
    copy.known = tilde;
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

  /**
   * The parts a batch's record holds (it landed, and its answer was lost): those are what its
   * webhooks get. The copies may now be behind Redis: unsure until read again (invariant 3).
   */
  const recorded = async (first: string): Promise<ReportParts> => {
    for (const copy of copies) copy.known = undefined;
    const names = reporting.flatMap((w) => [`${first}#${w.key}`, `${first}|${w.key}`]);
    const values = await redis.hmget(batchesKey(connectorId), ...names);
    // neither: recorded when it had no report (it gets every entry its filter matches)
    return new Map(reporting.flatMap((w, n): Array<[string, { value: string } | null]> => (values[2 * n] !== null ? [[w.key, { value: values[2 * n]! }]] : values[2 * n + 1] !== null ? [[w.key, null]] : [])));
  };

  const attempt = async (entries: readonly DecodedEntry[], candidates: readonly Candidate[], parts: ReadonlyArray<readonly [string, string]>): Promise<ReportParts | undefined> => {
    // an unsure copy that saw no other writer for a while is read again: trusted whole after it
    await Promise.all(reporting.map((w, n) => (copies[n]!.known === undefined && copies[n]!.quiet >= QUIET_BATCHES ? loadOne(w, copies[n]!) : undefined)));
    interned = new Map(); // the reads share record objects (twins again); kept, the texts would pile up read after read
    const first = entries[0]!.id;
    const unsure = copies.some((c) => c.known === undefined);
    const points = unsure ? [...new Set(candidates.map((c) => c.point))] : [];
    const encoded = new Map<Candidate, string>();
    const encode = (c: Candidate) => encoded.get(c) ?? encoded.set(c, encodeReported(c)).get(c)!;
    const fields: string[] = parts.flatMap(([k, id]) => [`${first}#${k}`, id]);
    const result = new Map<string, { value: string; entries: DecodedEntry[] } | null>();
    let ids: string[] | undefined;
    const perWebhook: string[] = [];
    twins ??= pairTwins();
    const decided: Decision[] = [];
    const partOf = new Map<Decision, { value: string; entries: DecodedEntry[] }>();
    reporting.forEach((w, n) => {
      const copy = copies[n]!;
      const twin = twins![n];
      const d = twin !== undefined ? decided[twin]! : decide(w.report, w.filter, (p) => copy.records.get(p), candidates);
      decided.push(d);
      if (d.reported.length === 0) {
        // nothing to send: delivered to it (CONTRACT 4.5), marked with the record
        fields.push(`${first}|${w.key}`, '1');
        result.set(w.key, null);
      } else {
        let part = partOf.get(d);
        if (part === undefined) {
          const matching = w.filter === undefined ? (ids ??= candidates.map((c) => c.id)) : candidates.filter((c) => matches(w.filter!, c.entry)).map((c) => c.id);
          part = { value: encodePart(matching, d.reported.map((c) => c.id)), entries: d.reported.map((c) => c.entry) };
          partOf.set(d, part);
        }
        fields.push(`${first}#${w.key}`, part.value);
        result.set(w.key, part);
      }
      const sha = copy.known !== undefined ? '' : createHash('sha1').update(points.map((p) => (copy.records.has(p) ? encodeReported(copy.records.get(p)!) : copy.foreign.get(p) ?? '')).join('\n')).digest('hex');
      // a twin's writes are its twin's, sent once (`-m`, reportScript.ts)
      perWebhook.push(w.digest, copy.known ?? '', sha, String(twin !== undefined ? -(twin + 1) : d.writes.size));
      if (twin === undefined) d.writes.forEach((c, p) => perWebhook.push(p, encode(c)));
    });
    forgetMemo(candidates);
    const args = [first, entries[entries.length - 1]!.id, String(fields.length / 2), ...fields, String(points.length), ...points, ...perWebhook];
    const answer = (await redis.eval(RECORD_SCRIPT, reporting.length + 1, batchesKey(connectorId), ...reporting.map(keyOf), ...args)) as ScriptAnswer;
    if (answer === 0) return recorded(first);
    if (answer[0] === 1) {
      const tildes = answer.slice(1) as string[];
      decided.forEach((d, n) => {
        const copy = copies[n]!;
        d.writes.forEach((c, p) => {
          copy.records.set(p, c);
          copy.foreign.delete(p);
        });
        const [before, after] = [tildes[2 * n]!, tildes[2 * n + 1]!];
        if (copy.known !== undefined) copy.known = after;
        else {
          copy.quiet = before === copy.lastWritten ? copy.quiet + 1 : 0;
          copy.lastWritten = after;
        }
        observer.onDecided(reporting[n]!, d.suppressed);
      });
      return result;
    }
    // invariant 2: decided against a state Redis no longer holds; take what moved and decide again
    twins = undefined;
    for (const c of answer as Conflict[]) {
      const copy = copies[c[0] - 1]!;
      if (c[1] === 'reset') {
        copy.records.clear();
        copy.foreign.clear();
        copy.known = `${reporting[c[0] - 1]!.digest} 0`;
      } else if (c[1] === 'stale') {
        copy.known = undefined;
        copy.quiet = 0;
        copy.lastWritten = undefined;
      } else {
        (c.slice(3) as string[]).forEach((raw, j) => {
          const r = raw === '' ? undefined : decodeReported(raw);
          if (r === undefined) copy.records.delete(points[j]!);
          else copy.records.set(points[j]!, r);
          // a field that is no record: kept as it is for the comparison (the point counts as never reported)
          if (r === undefined && raw !== '') copy.foreign.set(points[j]!, raw);
          else copy.foreign.delete(points[j]!);
        });
        copy.quiet = 0;
      }
    }
    return undefined;
  };

  return {
    load: () =>
      persist(retryMs, async () => {
        await Promise.all(reporting.map((w, n) => loadOne(w, copies[n]!)));
        interned = new Map();
        await deleteOthers();
      }, observer.onWriteError),
    record: (entries, parts) => {
      const candidates = entries.map((e) => candidateOf(e, e.point));
      return persist(retryMs, async () => {
        for (;;) {
          const r = await attempt(entries, candidates, parts);
          if (r !== undefined) return r;
        }
      }, observer.onWriteError);
    },
  };
};
