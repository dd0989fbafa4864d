import type { Precision } from '../../config/formatSettings';
import { escapeKey, extraFieldKey } from '../../config/lineKeys';

export { escapeKey } from '../../config/lineKeys';

/**
 * InfluxDB line protocol, one data point a line (CONTRACT 4.7):
 * `{measurement},casdu={C},ioa={I},source={S},type={T} value={V}[,{extra}={X}…] [{time}]`.
 * Ours, not a library's: the escaping rules are few, and each is tested line by line.
 */

/** Commas and spaces (measurement). */
const MEASUREMENT_SPECIAL = /[, ]/g;
/** `"` and `\` (string field values). */
const STRING_SPECIAL = /["\\]/g;

// Stryker disable next-line Regex: a fast path only; a looser pattern sends more texts to the replacement, which changes nothing more
const STRING_NEEDS = /["\\]/;

export const escapeMeasurement = (m: string): string => m.replace(MEASUREMENT_SPECIAL, '\\$&');

export const escapeStringField = (s: string): string => `"${STRING_NEEDS.test(s) ? s.replace(STRING_SPECIAL, '\\$&') : s}"`;

/** A tag's value as text (a number in its shortest form), escaped; empty when it has none. */
const tagText = (v: unknown): string => {
  if (v === undefined || v === null) return '';
  // a number's or boolean's text has nothing to escape (a fast path: JSON.stringify writes them as String does)
  // Stryker disable next-line ConditionalExpression,LogicalOperator,StringLiteral: that fast path
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return escapeKey(typeof v === 'string' ? v : JSON.stringify(v));
};

/** `ms` (an integer) in the precision's units, truncated, as an integer's digits (nanoseconds pass 2^53). */
export const timeIn = (ms: number, precision: Precision): string => {
  switch (precision) {
    case 'ns': return ms === 0 ? '0' : `${ms}000000`;
    case 'us': return ms === 0 ? '0' : `${ms}000`;
    case 'ms': return String(ms);
    case 's': return String(Math.trunc(ms / 1000));
  }
};

/** The last timestamp read, and its time: the points of a batch mostly share a few (one poll cycle's). */
let lastText: string | undefined;
let lastMs: number | undefined;

/** A point's `timestamp` to the millisecond; undefined when it has none or it does not parse. */
export const timestampMs = (t: unknown): number | undefined => {
  if (typeof t !== 'string') return undefined;
  if (t === lastText) return lastMs;
  const ms = Date.parse(t);
  lastText = t;
  lastMs = Number.isFinite(ms) ? Math.trunc(ms) : undefined;
  return lastMs;
};

export interface LineOptions {
  readonly measurement: string;
  readonly precision: Precision;
  /** `format.fields`: the only extra fields written, in this order (their names checked by the configuration); absent: every one. */
  readonly fields?: readonly string[];
}

/** An extra field's value as line protocol writes it; undefined for a value that is not written (CONTRACT 4.7). */
const fieldText = (x: unknown): string | undefined => {
  if (typeof x === 'number') return String(x);
  if (typeof x === 'boolean') return x ? 'true' : 'false';
  if (typeof x === 'string') return escapeStringField(x);
  return undefined;
};

const escapedMeasurements = new Map<string, string>();
const measurementOf = (m: string): string => {
  let e = escapedMeasurements.get(m);
  // Stryker disable next-line ConditionalExpression: a cache: escaping again gives the same text
  if (e === undefined) {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the cache's bound on memory
    if (escapedMeasurements.size >= 256) escapedMeasurements.clear();
    escapedMeasurements.set(m, (e = escapeMeasurement(m)));
  }
  return e;
};

/**
 * The line of one data point (ended by `\n`), or undefined when it cannot be written (its `value`
 * missing, null, an object or an array). `entryMs`: the time of its stream entry, used when the
 * point's `timestamp` is missing or does not parse; undefined (an interrogation): no time then.
 */
export const pointLine = (point: Readonly<Record<string, unknown>>, o: LineOptions, entryMs: number | undefined): string | undefined => {
  const v = point.value;
  let fields: string;
  if (typeof v === 'number') fields = `value=${String(v)}`;
  else if (typeof v === 'boolean') fields = `value=${v ? 1 : 0}`;
  else if (typeof v === 'string') fields = `value_text=${escapeStringField(v)}`;
  else return undefined;
  if (o.fields !== undefined) {
    for (const key of o.fields) {
      const text = Object.hasOwn(point, key) ? fieldText(point[key]) : undefined;
      if (text !== undefined) fields += `,${escapeKey(key)}=${text}`;
    }
  } else {
    for (const key in point) {
      // reserved names compared after escaping too: `time\` (its trailing `\` dropped) is left out
      const k = extraFieldKey(key);
      if (k === undefined) continue;
      const text = fieldText(point[key]);
      if (text !== undefined) fields += `,${k}=${text}`;
    }
  }
  let line = measurementOf(o.measurement);
  const casdu = tagText(point.casdu);
  const ioa = tagText(point.ioa);
  const source = tagText(point.source);
  const type = tagText(point.type);
  if (casdu !== '') line += `,casdu=${casdu}`;
  if (ioa !== '') line += `,ioa=${ioa}`;
  if (source !== '') line += `,source=${source}`;
  if (type !== '') line += `,type=${type}`;
  const ms = timestampMs(point.timestamp) ?? entryMs;
  return ms === undefined ? `${line} ${fields}\n` : `${line} ${fields} ${timeIn(ms, o.precision)}\n`;
};
