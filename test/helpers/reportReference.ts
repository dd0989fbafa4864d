import type { ReportSettings } from '../../src/config/reportSettings';
import type { PointFilter } from '../../src/config/webhookSettings';

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
export const reference = (settings: ReportSettings, filter: PointFilter | undefined, stream: ReadonlyArray<{ id: string; point: Record<string, unknown> }>): string[] => {
  const inRanges = (rs: ReadonlyArray<readonly [number, number]> | undefined, v: unknown) => rs === undefined || (typeof v === 'number' && rs.some(([lo, hi]) => v >= lo && v <= hi));
  const matchesFilter = (f: PointFilter, p: Record<string, unknown>) => inRanges(f.casdu, p.casdu) && inRanges(f.ioa, p.ioa) && inRanges(f.types, p.type);
  const ms = (id: string) => Number(id.split('-')[0]);
  const lastOf = new Map<string, { id: string; point: Record<string, unknown> }>();
  const out: string[] = [];
  for (const e of stream) {
    if (filter !== undefined && !matchesFilter(filter, e.point)) continue;
    const key = `${JSON.stringify(e.point.casdu)}:${JSON.stringify(e.point.ioa)}`;
    const l = lastOf.get(key);
    let send = l === undefined;
    if (l !== undefined) {
      // 1. any field but value and timestamp differs (present in one only, or of another JSON value)
      const others = new Set([...Object.keys(e.point), ...Object.keys(l.point)].filter((k) => k !== 'value' && k !== 'timestamp'));
      send = [...others].some((k) => Object.hasOwn(e.point, k) !== Object.hasOwn(l.point, k) || !deepEqual(e.point[k], l.point[k]));
      // 3. silence between stream IDs
      if (!send && settings.maxSilenceSeconds !== undefined) send = ms(e.id) - ms(l.id) >= settings.maxSilenceSeconds * 1000;
      // 2. the value beyond the deadband
      if (!send) {
        const v = e.point.value;
        const lv = l.point.value;
        if (typeof v === 'number' && typeof lv === 'number') {
          const rule = (settings.deadband ?? []).find((r) => r.filter === undefined || matchesFilter(r.filter, e.point));
          send = rule === undefined ? v !== lv : 'absolute' in rule ? Math.abs(v - lv) > rule.absolute : Math.abs(v - lv) * 100 > rule.percent * Math.abs(lv);
        } else send = !(Object.hasOwn(e.point, 'value') === Object.hasOwn(l.point, 'value') && deepEqual(v, lv));
      }
    }
    if (send) {
      out.push(e.id);
      lastOf.set(key, e);
    }
  }
  return out;
};

