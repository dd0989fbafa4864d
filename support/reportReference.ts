import type { ReportSettings } from '../src/config/reportSettings';
import type { PointFilter } from '../src/config/webhookSettings';

/**
 * The reference: CONTRACT 4.8 read literally — one reader, in stream order, a map of the last
 * reported data point objects, compared with a deep equality of its own.
 */
const deepEqual = (a: unknown, b: unknown): boolean => {
  if (typeof a !== typeof b) return false;
  if (a === null || b === null || typeof a !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b as object, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
};
type Entry = { readonly id: string; readonly point: Record<string, unknown> };

const inRanges = (rs: ReadonlyArray<readonly [number, number]> | undefined, v: unknown) => rs === undefined || (typeof v === 'number' && rs.some(([lo, hi]) => v >= lo && v <= hi));
const matchesFilter = (f: PointFilter, p: Record<string, unknown>) => inRanges(f.casdu, p.casdu) && inRanges(f.ioa, p.ioa) && inRanges(f.types, p.type);
const ms = (id: string) => Number(id.split('-')[0]);
/** A point's field in the state: `{casdu}:{ioa}`. */
export const pointKey = (p: Record<string, unknown>) => `${JSON.stringify(p.casdu)}:${JSON.stringify(p.ioa)}`;

/** Whether `e` is to be reported when `l` is the last entry reported of its point (CONTRACT 4.8's three reasons). */
export const allowed = (settings: ReportSettings, l: Entry, e: Entry): boolean => {
  // 1. any field but value and timestamp differs (present in one only, or of another JSON value)
  const others = new Set([...Object.keys(e.point), ...Object.keys(l.point)].filter((k) => k !== 'value' && k !== 'timestamp'));
  if ([...others].some((k) => Object.hasOwn(e.point, k) !== Object.hasOwn(l.point, k) || !deepEqual(e.point[k], l.point[k]))) return true;
  // 3. silence between stream IDs
  if (settings.maxSilenceSeconds !== undefined && ms(e.id) - ms(l.id) >= settings.maxSilenceSeconds * 1000) return true;
  // 2. the value beyond the deadband
  const v = e.point.value;
  const lv = l.point.value;
  if (typeof v === 'number' && typeof lv === 'number') {
    const rule = (settings.deadband ?? []).find((r) => r.filter === undefined || matchesFilter(r.filter, e.point));
    return rule === undefined ? v !== lv : 'absolute' in rule ? Math.abs(v - lv) > rule.absolute : Math.abs(v - lv) * 100 > rule.percent * Math.abs(lv);
  }
  return !(Object.hasOwn(e.point, 'value') === Object.hasOwn(l.point, 'value') && deepEqual(v, lv));
};

/** The IDs a stream-order reader applying 4.8 reports, from the state `start` (point → last reported entry; empty by default). */
export const reference = (settings: ReportSettings, filter: PointFilter | undefined, stream: readonly Entry[], start: ReadonlyMap<string, Entry> = new Map()): string[] => {
  const lastOf = new Map(start);
  const out: string[] = [];
  for (const e of stream) {
    if (filter !== undefined && !matchesFilter(filter, e.point)) continue;
    const key = pointKey(e.point);
    const l = lastOf.get(key);
    if (l === undefined || allowed(settings, l, e)) {
      out.push(e.id);
      lastOf.set(key, e);
    }
  }
  return out;
};
