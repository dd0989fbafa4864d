import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import { describe } from './codecs';
import { FilterCodec } from './webhookCodecs';

/** A rule's filter: as a webhook's (CONTRACT 4.5; `PointFilter` in webhookSettings.ts is the same shape). */
type PointFilter = t.TypeOf<typeof FilterCodec>;

/**
 * A webhook's `report` (CONTRACT 4.8): which changes of a point it is sent. Checked here, field by
 * field, so that an error names the field (`webhooks[1].report.deadband[0]: give absolute or
 * percent, not both`); what the rules decide is `src/streams/webhook/report.ts`.
 */
export type DeadbandRule =
  | { readonly filter?: PointFilter; readonly absolute: number }
  | { readonly filter?: PointFilter; readonly percent: number };

export interface ReportSettings {
  /** First matching rule wins; none matching, any change of the value is reported. */
  readonly deadband?: readonly DeadbandRule[];
  /** 1 to 86400: a point is reported again once this long lies between its entries' stream IDs. */
  readonly maxSilenceSeconds?: number;
}

const REPORT_FIELDS = ['deadband', 'maxSilenceSeconds'];
const RULE_FIELDS = ['filter', 'absolute', 'percent'];

const isObject = (u: unknown): u is Record<string, unknown> => u !== null && typeof u === 'object' && !Array.isArray(u);
const unknownField = (o: Record<string, unknown>, known: readonly string[]): string | undefined => Object.keys(o).find((k) => !known.includes(k));

/** A context entry: the errors' path gets `.key`, or `[key]` below an array. */
const at = (c: t.Context, key: string, actual: unknown): t.Context => t.appendContext(c, key, t.unknown, actual);

const threshold = (u: unknown): E.Either<string, number> =>
  typeof u === 'number' && Number.isFinite(u) && u >= 0 ? E.right(u) : E.left(`must be a finite number ≥ 0, got ${describe(u)}`);

const rule = (u: unknown, c: t.Context): t.Validation<DeadbandRule> => {
  if (!isObject(u)) return t.failure(u, c, `must be an object {"filter"?, "absolute" or "percent"}, got ${describe(u)}`);
  const extra = unknownField(u, RULE_FIELDS);
  if (extra !== undefined) return t.failure(u, c, `unknown field ${JSON.stringify(extra)} (a rule has filter, and absolute or percent)`);
  if (u.absolute !== undefined && u.percent !== undefined) return t.failure(u, c, 'give absolute or percent, not both');
  if (u.absolute === undefined && u.percent === undefined) return t.failure(u, c, 'give absolute or percent');
  const name = u.absolute !== undefined ? 'absolute' : 'percent';
  const value = threshold(u[name]);
  if (E.isLeft(value)) return t.failure(u[name], at(c, name, u[name]), value.left);
  let filter: PointFilter | undefined;
  if (u.filter !== undefined) {
    const f = FilterCodec.validate(u.filter, at(c, 'filter', u.filter));
    if (E.isLeft(f)) return f;
    filter = f.right;
  }
  const r = name === 'absolute' ? { absolute: value.right } : { percent: value.right };
  return t.success(filter === undefined ? r : { filter, ...r });
};

const validate = (u: unknown, c: t.Context): t.Validation<ReportSettings> => {
  if (!isObject(u)) return t.failure(u, c, `must be an object {"deadband"?, "maxSilenceSeconds"?}, got ${describe(u)}`);
  const extra = unknownField(u, REPORT_FIELDS);
  if (extra !== undefined) return t.failure(u, c, `unknown field ${JSON.stringify(extra)} (report has deadband and maxSilenceSeconds)`);
  const out: { deadband?: DeadbandRule[]; maxSilenceSeconds?: number } = {};
  if (u.deadband !== undefined) {
    const dc = at(c, 'deadband', u.deadband);
    if (!Array.isArray(u.deadband) || u.deadband.length === 0) return t.failure(u.deadband, dc, `must be a non-empty list of rules, got ${describe(u.deadband)}`);
    const rules: DeadbandRule[] = [];
    for (const [i, x] of u.deadband.entries()) {
      const r = rule(x, at(dc, String(i), x));
      if (E.isLeft(r)) return r;
      rules.push(r.right);
    }
    out.deadband = rules;
  }
  if (u.maxSilenceSeconds !== undefined) {
    const s = u.maxSilenceSeconds;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < 1 || s > 86400) {
      return t.failure(s, at(c, 'maxSilenceSeconds', s), `must be an integer in 1 to 86400, got ${describe(s)}`);
    }
    out.maxSilenceSeconds = s;
  }
  if (out.deadband === undefined && out.maxSilenceSeconds === undefined) return t.failure(u, c, 'give a non-empty deadband or maxSilenceSeconds, or both');
  return t.success(out);
};

export const ReportCodec = new t.Type<ReportSettings, unknown, unknown>('report', (u): u is ReportSettings => E.isRight(validate(u, [])), validate, (a) => a);
