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

/** The last entry reported of a point: its stream ID, its `value` and its other fields, each as canonical JSON. */
export interface Reported {
  readonly id: string;
  /** `''` when the entry had no `value`. */
  readonly value: string;
  readonly rest: string;
}

/** An entry as the rules see it. */
export interface Candidate {
  readonly id: string;
  /** `{casdu}:{ioa}`: the state's field. */
  readonly point: string;
  readonly value: string;
  readonly rest: string;
  readonly entry: Pick<DecodedEntry, 'casdu' | 'ioa' | 'type'>;
}

/** Canonical JSON: object keys sorted, at every depth; numbers as JavaScript writes them (so by value). */
export const canonical = (u: unknown): string => {
  if (u === null || typeof u !== 'object') return JSON.stringify(u) ?? 'null';
  if (Array.isArray(u)) return `[${u.map(canonical).join(',')}]`;
  const o = u as Record<string, unknown>;
  return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
};

/** Fields the state does not compare: `value` (by the deadband), `timestamp`, and the point's own address (its field). */
const NOT_REST = new Set(['value', 'timestamp', 'casdu', 'ioa']);

/** The entry as the rules see it; `point` is the data point object its JSON holds. */
export const candidateOf = (e: DecodedEntry, point: Record<string, unknown> = JSON.parse(e.json) as Record<string, unknown>): Candidate => {
  const rest: Record<string, unknown> = {};
  for (const k of Object.keys(point)) if (!NOT_REST.has(k)) rest[k] = point[k];
  return {
    id: e.id,
    point: `${canonical(point.casdu)}:${canonical(point.ioa)}`,
    value: 'value' in point ? canonical(point.value) : '',
    rest: canonical(rest),
    entry: e,
  };
};

/** A stream ID's parts as numbers (exact up to 2^53 ms, some 285,000 years). */
const idParts = (id: string): [number, number] => {
  const dash = id.indexOf('-');
  return [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
};

const newer = (a: string, b: string): boolean => {
  const [am, as] = idParts(a);
  const [bm, bs] = idParts(b);
  return am > bm || (am === bm && as > bs);
};

const NUMBER = /^-?[0-9]/;

/** The first rule whose filter matches the point, or undefined. */
export const ruleFor = (rules: readonly DeadbandRule[], e: Candidate['entry']): DeadbandRule | undefined =>
  rules.find((r) => r.filter === undefined || matches(r.filter, e));

/** Invariant 5. */
const valueMoved = (rules: readonly DeadbandRule[], c: Candidate, last: Reported): boolean => {
  if (!NUMBER.test(c.value) || !NUMBER.test(last.value)) return c.value !== last.value;
  const v = Number(c.value);
  const l = Number(last.value);
  const r = ruleFor(rules, c.entry);
  if (r === undefined) return v !== l;
  return 'absolute' in r ? Math.abs(v - l) > r.absolute : Math.abs(v - l) * 100 > r.percent * Math.abs(l);
};

/** Invariants 1–5: whether `c` is reported, given the last entry reported of its point. */
export const reportable = (report: ReportSettings, last: Reported | undefined, c: Candidate): boolean => {
  if (last === undefined) return true;
  // the same entry decided again (its batch's record was written, its answer lost): as it was, reported
  if (c.id === last.id) return true;
  if (!newer(c.id, last.id)) return false;
  if (c.rest !== last.rest) return true;
  if (report.maxSilenceSeconds !== undefined && idParts(c.id)[0] - idParts(last.id)[0] >= report.maxSilenceSeconds * 1000) return true;
  return valueMoved(report.deadband ?? [], c, last);
};

export interface Decision {
  /** The entries reported, in stream order. */
  readonly reported: readonly Candidate[];
  /** Entries the filter matched and `report` held back. */
  readonly suppressed: number;
  /** The state's new records: point → its last reported entry. */
  readonly writes: ReadonlyMap<string, Reported>;
}

/** Invariants 6, 7: a batch's candidates, in stream order, against the state `lookup` gives. */
export const decide = (
  report: ReportSettings, filter: PointFilter | undefined, lookup: (point: string) => Reported | undefined, candidates: readonly Candidate[],
): Decision => {
  const writes = new Map<string, Reported>();
  const reported: Candidate[] = [];
  let suppressed = 0;
  for (const c of candidates) {
    if (filter !== undefined && !matches(filter, c.entry)) continue;
    const last = writes.get(c.point) ?? lookup(c.point);
    if (reportable(report, last, c)) {
      reported.push(c);
      writes.set(c.point, { id: c.id, value: c.value, rest: c.rest });
    } else suppressed++;
  }
  return { reported, suppressed, writes };
};

/**
 * A record as the state's hash stores it: `{id}\n{value}\n{rest}` (canonical JSON never holds a
 * raw line break, so the text splits back exactly).
 */
export const encodeReported = (r: Reported): string => `${r.id}\n${r.value}\n${r.rest}`;

/** A stored record; undefined for anything that is not one (a foreign or damaged field: the point counts as never reported). */
export const decodeReported = (s: string): Reported | undefined => {
  const a = s.indexOf('\n');
  const b = s.indexOf('\n', a + 1);
  if (a < 0 || b < 0 || !/^[0-9]+-[0-9]+$/.test(s.slice(0, a))) return undefined;
  return { id: s.slice(0, a), value: s.slice(a + 1, b), rest: s.slice(b + 1) };
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
  const held = new Set(reported);
  const out = matching.filter((c) => !held.has(c));
  return reported.length <= out.length ? `${id} +${reported.join(',')}` : `${id} -${out.join(',')}`;
};

/** A part's record read back: its webhook-id and whether an entry (of those the filter matched) is in it. */
export const decodePart = (value: string): { readonly webhookId: string; readonly holds: (id: string) => boolean } => {
  const space = value.indexOf(' ');
  if (space < 0) return { webhookId: value, holds: () => true };
  const ids = new Set(value.slice(space + 2).split(','));
  const plus = value[space + 1] === '+';
  return { webhookId: value.slice(0, space), holds: (id) => ids.has(id) === plus };
};
