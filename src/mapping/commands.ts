import type { MappingFailures, MappedPoint } from './apply';
import { errorsStream, processImageKey, UPDATES_STREAM } from './keys';
import type { Mapping } from './types';

/** A Redis command as plain data: name and arguments. */
export type Command = readonly [string, ...string[]];

export const ERRORS_MAXLEN = 10000;

/**
 * A stream entry of `process:updates` (CONTRACT 5.1, 9), declared once: its fields in order, each
 * the point's (read from the mapped point) or the write's (`source`); a `traceparent`, when the
 * write has one, ends it. The `XADD`s and the append script (its text and its arguments) are all
 * rendered from this, so that they cannot write different entries.
 */
type PointValue = (m: MappedPoint) => string;
const ENTRY: ReadonlyArray<readonly [field: string, value: PointValue | 'source']> = [
  ['casdu', (m) => String(m.point.casdu)],
  ['ioa', (m) => String(m.point.ioa)],
  ['source', 'source'],
  ['data', (m) => m.json],
];
const POINT_VALUES: readonly PointValue[] = ENTRY.flatMap(([, v]) => (v === 'source' ? [] : [v]));

/**
 * The stream entries of one write, as data: rendered as `XADD`s, or as `EVAL`s of the append
 * script where the connection runs it (`renderWrites`).
 */
export interface Appends {
  readonly kind: 'appends';
  readonly maxLen: string;
  readonly source: string;
  readonly traceparent: string | undefined;
  readonly points: readonly MappedPoint[];
}
/** What a write sends in its `MULTI`: commands, and its stream entries as data. */
export type Write = Command | Appends;
export const isAppends = (w: Write): w is Appends => !Array.isArray(w);

/**
 * CONTRACT 5.1, with one change of shape: the process image keys are written by ONE
 * `MSET` of every key and its last JSON (a key written by two mappings, or by many items of an
 * array body, ends with the later one's value, as with one `SET` each in order; it is named once,
 * where it first comes), then one stream entry per point, in order. A `MULTI` is applied at once,
 * so no reader sees the difference; it saves about 13 % of the CPU time of a 10-mapping request
 * (ioredis builds, times and parses every command separately), and an array body of 100 readings
 * of 10 addresses sends 10 keys, not 1,000.
 */
export const writePlan = (points: readonly MappedPoint[], source: string, maxLen: number, traceparent?: string): Write[] => {
  if (points.length === 0) return [];
  const image = new Map<string, string>();
  for (const { point, json } of points) image.set(processImageKey(point.casdu, point.ioa), json);
  const mset: [string, ...string[]] = ['mset'];
  for (const [key, json] of image) mset.push(key, json);
  return [mset, { kind: 'appends', maxLen: String(maxLen), source, traceparent, points }];
};

/** The write's commands, its stream entries as `XADD`s, or (`byScript`) as `EVAL`s of `APPEND_SCRIPT`, in the same order. */
export const renderWrites = (writes: readonly Write[], byScript: boolean): Command[] =>
  writes.flatMap((w): Command[] => {
    if (!isAppends(w)) return [w];
    return byScript ? appendScripts(w) : w.points.map((m) => xaddOf(w, m));
  });

/** `writePlan` rendered (`renderWrites`). */
export const writeCommands = (points: readonly MappedPoint[], source: string, maxLen: number, traceparent?: string, byScript = false): Command[] =>
  renderWrites(writePlan(points, source, maxLen, traceparent), byScript);

const xaddOf = (w: Appends, m: MappedPoint): Command => {
  const xadd: [string, ...string[]] = ['xadd', UPDATES_STREAM, 'MAXLEN', '~', w.maxLen, '*'];
  for (const [field, value] of ENTRY) xadd.push(field, value === 'source' ? w.source : value(m));
  // CONTRACT 9: the write's trace context, only when tracing is on and the write is sampled
  if (w.traceparent !== undefined) xadd.push('traceparent', w.traceparent);
  return xadd;
};

/** The entry's fields as the script passes them to `XADD`: `'casdu', ARGV[i], …, 'source', source, …`. */
const scriptFields = (): string => {
  let p = 0;
  return ENTRY.map(([field, value]) => `'${field}', ${value === 'source' ? 'source' : `ARGV[i${p++ === 0 ? '' : ` + ${p - 1}`}]`}`).join(', ');
};

/**
 * The same `XADD`s, run by one script inside the `MULTI` (README "How a write reaches Redis"):
 * ioredis builds, times and parses every command of a `MULTI` on its own, and at one `XADD` a data
 * point that was most of an array body's CPU time. The script takes the stream as its key and, as
 * arguments, `MAXLEN`, the source, the traceparent (empty for none), then the point's fields of
 * each entry in order (`ENTRY`), and appends exactly the entries `xaddOf` would. `#!lua`: a script
 * of Redis 7's kind, flags declared (none: a write, not `allow-oom`). Redis 7 decides out-of-memory
 * once for the whole `EXEC` (tested), so the transaction stays all or nothing. Only sent on a
 * connection where `APPEND_PROBE` answered (Redis 7, `EVAL` and the script's `XADD` allowed); else
 * the `XADD`s are sent as they are.
 */
export const APPEND_SCRIPT = `#!lua
local key, maxlen, source, tp = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
for i = 4, #ARGV, ${POINT_VALUES.length} do
  if tp == '' then
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', ${scriptFields()})
  else
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', ${scriptFields()}, 'traceparent', tp)
  end
end
return (#ARGV - 3) / ${POINT_VALUES.length}
`;

/**
 * CONTRACT 5.1: the probe that chooses the script checks every command the script runs — its
 * `XADD`, as the script sends it, on the stream (`redis.acl_check_cmd`, Redis 7) — so that a
 * `MULTI` never holds a script Redis would refuse inside the `EXEC` after the `MSET` was applied.
 * `no-writes`: the probe is refused neither by a replica (a `READONLY` answer would make the
 * connection reconnect, again and again) nor by a Redis out of memory or short of replicas. Run
 * as `EVAL APPEND_PROBE 1 process:updates`: the `EVAL` itself is checked on that key too.
 */
export const APPEND_PROBE = `#!lua flags=no-writes
if redis.acl_check_cmd('XADD', KEYS[1], 'MAXLEN', '~', '1', '*', ${ENTRY.map(([field]) => `'${field}', '0'`).join(', ')}, 'traceparent', '0') then
  return 1
end
return redis.error_reply('NOPERM the append script may not run XADD on ' .. KEYS[1])
`;

/** Entries per `EVAL`: its argument list stays bounded (three arguments an entry, `POINT_VALUES`) whatever `Http:MaxBatchItems` is. */
export const SCRIPT_ENTRIES = 10000;

const appendScripts = (w: Appends): Command[] => {
  const scripts: Command[] = [];
  for (let start = 0; start < w.points.length; start += SCRIPT_ENTRIES) {
    const call: [string, ...string[]] = ['eval', APPEND_SCRIPT, '1', UPDATES_STREAM, w.maxLen, w.source, w.traceparent ?? ''];
    const end = Math.min(w.points.length, start + SCRIPT_ENTRIES);
    for (let i = start; i < end; i++) for (const value of POINT_VALUES) call.push(value(w.points[i]!));
    scripts.push(call);
  }
  return scripts;
};

/** CONTRACT 5.1, 5.5: one error-stream entry per failed mapping (and item of an array body, in field `item`), and nothing else. */
export const errorCommands = (connectorId: string, topic: string, f: MappingFailures): Command[] =>
  f.failed.map(({ mapping, error, item }) => [
    'xadd', errorsStream(connectorId), 'MAXLEN', '~', String(ERRORS_MAXLEN), '*',
    'topic', topic, 'signalId', mapping.name, 'error', error, 'casdu', String(mapping.casdu), 'ioa', String(mapping.ioa),
    ...(item === undefined ? [] : ['item', String(item)]),
  ]);

/** Mappings grouped by topic once per configuration, so a request costs one map lookup. */
export const byTopic = (mappings: readonly Mapping[]): ReadonlyMap<string, readonly Mapping[]> => {
  const index = new Map<string, Mapping[]>();
  for (const m of mappings) {
    const list = index.get(m.topic);
    if (list) list.push(m);
    else index.set(m.topic, [m]);
  }
  return index;
};
