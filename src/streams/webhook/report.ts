import type { DeadbandRule, ReportSettings } from '../../config/reportSettings';
import type { PointFilter } from '../../config/webhookSettings';
import type { DecodedEntry } from '../read/entries';
import { matches } from './filter';

/**
 * Report by exception (CONTRACT 4.8): which entries of a batch a webhook with `report` is sent,
 * and the state that leaves. Pure: a function of the state, the rules and the entries. Where the
 * state lives and how a decision is written with its batch's record is `reportState.ts`.
 *
 * Invariants (each has a row in test/streams.report.test.ts; `test/streams.report.property.test.ts`
 * holds the whole against a plain reference written from 4.8):
 * 1. An entry of a point nothing was reported of yet (no state) is reportable.
 * 2. An entry older (by stream ID) than the last reported entry of its point is not reportable
 *    (with replicas, a newer value has gone out already); that entry itself, decided again, is.
 * 3. An entry one of whose fields other than `value` and `timestamp` differs from the last reported
 *    entry's, compared as JSON (a field present in one and absent in the other differs), is
 *    reportable.
 * 4. With `maxSilenceSeconds`, an entry whose stream ID lies at least that long after the last
 *    reported entry's is reportable (IDs' milliseconds, never the wall clock).
 * 5. Two numbers: the first `deadband` rule whose filter matches the point decides — `absolute` A:
 *    reportable when |v − last| > A; `percent` P: when |v − last| × 100 > P × |last|; no rule
 *    matching: when they differ. Any other pair of values: when they differ as JSON.
 * 6. A batch is decided in stream order, each entry against the state the entries before it left:
 *    a reported entry becomes its point's state; an entry not reported changes nothing.
 * 7. Only entries the webhook's filter matches are decided; the others are neither reported nor
 *    held back, and leave the state as it is.
 */

/**
 * The last entry reported of a point: its stream ID (and its parts as numbers), its `value` (`has`:
 * whether it had one; `num`: the value when it is a number) and its data point object, whose
 * fields other than those in `NOT_REST` are the ones compared (`others`: how many, -1 until first
 * counted — `countOthers`). Strings are made of it only when it is written (`encodeReported`).
 */
export interface Reported {
  readonly id: string;
  readonly ms: number;
  readonly seq: number;
  readonly has: boolean;
  readonly v: unknown;
  readonly num: number | undefined;
  readonly obj: Readonly<Record<string, unknown>>;
  others: number;
}

/** An entry as the rules see it: what it would leave as its point's state, its point, and its address for the rules' filters. */
export interface Candidate extends Reported {
  /** `{casdu}:{ioa}`: the state's field. */
  readonly point: string;
  readonly entry: DecodedEntry;
}

/**
 * An object's keys (but those `skip` names), sorted as `Array.prototype.sort` sorts strings: a few
 * in place by insertion (no work array: this runs for every record written), many by `sort`.
 */
const sortedKeys = (o: Readonly<Record<string, unknown>>, skip?: ReadonlySet<string>): string[] => {
  const keys: string[] = [];
  for (const k of Object.keys(o)) if (skip === undefined || !skip.has(k)) keys.push(k);
  // Stryker disable next-line ConditionalExpression,EqualityOperator: a cost — either way sorts alike
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: keys[-1] is undefined (never greater), and no two keys are equal
    for (; j >= 0 && keys[j]! > k; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = k;
  }
  return keys;
};

/** An object (but the keys `skip` names) as canonical JSON. */
const canonicalObject = (o: Readonly<Record<string, unknown>>, skip?: ReadonlySet<string>): string => {
  let out = '{';
  for (const k of sortedKeys(o, skip)) out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonical(o[k])}`;
  return `${out}}`;
};

/** Canonical JSON: object keys sorted, at every depth; numbers as JavaScript writes them (so by value). */
export const canonical = (u: unknown): string => {
  if (u === null || typeof u !== 'object') return JSON.stringify(u) ?? 'null';
  if (Array.isArray(u)) return `[${u.map(canonical).join(',')}]`;
  return canonicalObject(u as Record<string, unknown>);
};

/** Two JSON values equal as JSON (numbers by value, object keys in any order). */
const sameJson = (a: unknown, b: unknown): boolean => a === b || canonical(a) === canonical(b);

/** Fields the state does not compare: `value` (by the deadband), `timestamp`, and the point's own address (its field). */
const NOT_REST = new Set(['value', 'timestamp', 'casdu', 'ioa']);

/** The number of fields compared, counted once and kept on the record. */
// Stryker disable next-line ConditionalExpression,EqualityOperator: a cache — counting again gives the same number
const countOthers = (r: Reported): number => (r.others >= 0 ? r.others : (r.others = othersOf(r.obj)));

const othersOf = (o: Readonly<Record<string, unknown>>): number => {
  let n = 0;
  for (const k in o) if (!NOT_REST.has(k)) n++;
  return n;
};

/** A stream ID's parts as numbers (exact up to 2^53 ms, some 285,000 years). */
const idMs = (id: string): number => Number(id.slice(0, id.indexOf('-')));
const idSeq = (id: string): number => Number(id.slice(id.indexOf('-') + 1));
/** The key of a point whose address the decoder found integers (as canonical JSON writes them), else of its JSON values. */
const pointKey = (e: DecodedEntry, point: Readonly<Record<string, unknown>>): string =>
  e.casdu !== undefined && e.ioa !== undefined ? `${e.casdu}:${e.ioa}` : `${canonical(point.casdu)}:${canonical(point.ioa)}`;

/** The entry as the rules see it; `point` is the data point object its JSON holds (parsed here when not given). */
export const candidateOf = (e: DecodedEntry, point: Record<string, unknown> = JSON.parse(e.json) as Record<string, unknown>): Candidate => {
  const has = 'value' in point;
  const v = point.value;
  return {
    id: e.id, ms: idMs(e.id), seq: idSeq(e.id), has, v, num: typeof v === 'number' ? v : undefined, obj: point, others: -1,
    point: pointKey(e, point), entry: e,
    // reportableOnce's memo, in the object's shape from the start
    memoLast: undefined, memoRules: undefined, memoAnswer: false,
  } as Candidate;
};

/** The first rule whose filter matches the point, or undefined. */
export const ruleFor = (rules: readonly DeadbandRule[], e: Pick<DecodedEntry, 'casdu' | 'ioa' | 'type'>): DeadbandRule | undefined =>
  rules.find((r) => r.filter === undefined || matches(r.filter, e));

/** Invariant 3: a field other than value and timestamp differs (or is in one only). */
const statusChanged = (c: Reported, last: Reported): boolean => {
  let n = 0;
  for (const k in c.obj) {
    if (NOT_REST.has(k)) continue;
    n++;
    if (!Object.hasOwn(last.obj, k) || !sameJson(c.obj[k], last.obj[k])) return true;
  }
  return n !== countOthers(last);
};

/** Invariant 5. */
const valueMoved = (rules: readonly DeadbandRule[], c: Candidate, last: Reported): boolean => {
  const v = c.num;
  const l = last.num;
  if (v === undefined || l === undefined) return c.has !== last.has || !sameJson(c.v, last.v);
  const r = ruleFor(rules, c.entry);
  if (r === undefined) return v !== l;
  return 'absolute' in r ? Math.abs(v - l) > r.absolute : Math.abs(v - l) * 100 > r.percent * Math.abs(l);
};

/** Invariants 1–5: whether `c` is reported, given the last entry reported of its point. */
export const reportable = (report: ReportSettings, last: Reported | undefined, c: Candidate): boolean => {
  if (last === undefined) return true;
  if (c.ms < last.ms || (c.ms === last.ms && c.seq < last.seq)) return false;
  // the same entry decided again (its batch's record was written, its answer lost): as it was, reported
  if (c.ms === last.ms && c.seq === last.seq) return true;
  if (statusChanged(c, last)) return true;
  // Stryker disable next-line ConditionalExpression: without maxSilenceSeconds the comparison is with NaN, false either way
  if (report.maxSilenceSeconds !== undefined && c.ms - last.ms >= report.maxSilenceSeconds * 1000) return true;
  return valueMoved(report.deadband ?? [], c, last);
};

/**
 * `reportable`, kept on the candidate for the last rules and record it was asked with: webhooks
 * with the same settings share one settings object (`reportingOf`) and, once they reported a point,
 * its record object, so an entry is decided once however many of them there are.
 */
const reportableOnce = (report: ReportSettings, last: Reported | undefined, c: Candidate): boolean => {
  const memo = c as { memoLast?: Reported; memoRules?: ReportSettings; memoAnswer?: boolean };
  // Stryker disable next-line ConditionalExpression,LogicalOperator: a memo — deciding again gives the same answer
  if (memo.memoRules !== report || memo.memoLast !== last) {
    memo.memoAnswer = reportable(report, last, c);
    memo.memoRules = report;
    memo.memoLast = last;
  }
  return memo.memoAnswer!;
};

/**
 * Clears the memo of `reportableOnce` once a batch is decided for every webhook: a reported entry
 * stays in the state as its point's record, and its memo would hold the record before it — and that
 * one the one before, the point's whole history kept alive.
 */
export const forgetMemo = (candidates: readonly Candidate[]): void => {
  for (const c of candidates) {
    const memo = c as { memoLast?: Reported; memoRules?: ReportSettings };
    memo.memoLast = undefined;
    memo.memoRules = undefined;
  }
};

export interface Decision {
  /** The entries reported, in stream order. */
  readonly reported: readonly Candidate[];
  /** Entries the filter matched and `report` held back. */
  readonly suppressed: number;
  /** The state's new records: point → its last reported entry. */
  readonly writes: ReadonlyMap<string, Candidate>;
}

/** Invariants 6, 7: a batch's candidates, in stream order, against the state `lookup` gives. */
export const decide = (
  report: ReportSettings, filter: PointFilter | undefined, lookup: (point: string) => Reported | undefined, candidates: readonly Candidate[],
): Decision => {
  const writes = new Map<string, Candidate>();
  const reported: Candidate[] = [];
  let suppressed = 0;
  for (const c of candidates) {
    if (filter !== undefined && !matches(filter, c.entry)) continue;
    const last = writes.get(c.point) ?? lookup(c.point);
    if (reportableOnce(report, last, c)) {
      reported.push(c);
      // the candidate is its own record: one object however many webhooks report it
      writes.set(c.point, c);
    } else suppressed++;
  }
  return { reported, suppressed, writes };
};

/**
 * A record as the state's hash stores it: `{id}\n{value}\n{other fields}`, the value and the
 * object of the other fields as canonical JSON (the value empty when the entry had none; canonical
 * JSON never holds a raw line break, so the text splits back exactly).
 */
export const encodeReported = (r: Reported): string => `${r.id}\n${r.has ? canonical(r.v) : ''}\n${canonicalObject(r.obj, NOT_REST)}`;

/** A stored record; undefined for anything that is not one (a foreign or damaged field: the point counts as never reported). */
export const decodeReported = (s: string): Reported | undefined => {
  const parts = s.split('\n');
  if (parts.length !== 3 || !/^[0-9]+-[0-9]+$/.test(parts[0]!)) return undefined;
  const [id, value, rest] = parts as [string, string, string];
  let v: unknown;
  let obj: unknown;
  try {
    v = value === '' ? undefined : JSON.parse(value);
    obj = JSON.parse(rest);
    // Stryker disable next-line BlockStatement: without it the check below refuses the same texts (nothing parsed is no object)
  } catch {
    return undefined;
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const o = obj as Record<string, unknown>;
  return { id, ms: idMs(id), seq: idSeq(id), has: value !== '', v, num: typeof v === 'number' ? v : undefined, obj: o, others: othersOf(o) };
};

/**
 * A reporting webhook's part as its batch's record keeps it (the value of `{first}#{key}`): its
 * webhook-id, then, when it holds not every entry its filter matched, ` +` and the ids it holds or
 * ` -` and those it does not, whichever list is shorter. `matching` are the ids the filter matched,
 * in stream order; `reported` a non-empty part of them, in order.
 */
export const encodePart = (matching: readonly string[], reported: readonly string[]): string => {
  const id = `${reported[0]!}_${reported[reported.length - 1]!}`;
  if (reported.length === matching.length) return id;
  // the ids not held are matching's others: counted without listing them, unless they are the shorter list
  if (reported.length <= matching.length - reported.length) return `${id} +${reported.join(',')}`;
  const held = new Set(reported);
  return `${id} -${matching.filter((c) => !held.has(c)).join(',')}`;
};

/** A part's record read back: its webhook-id and whether an entry (of those the filter matched) is in it. */
export const decodePart = (value: string): { readonly webhookId: string; readonly holds: (id: string) => boolean } => {
  const space = value.indexOf(' ');
  // Stryker disable next-line EqualityOperator: a record never starts with a space (it starts with its webhook-id)
  if (space < 0) return { webhookId: value, holds: () => true };
  const ids = new Set(value.slice(space + 2).split(','));
  const plus = value[space + 1] === '+';
  return { webhookId: value.slice(0, space), holds: (id) => ids.has(id) === plus };
};
