import type { MappingFailures, MappedPoint } from './apply';
import { errorsStream, processImageKey, UPDATES_STREAM } from './keys';
import type { Mapping } from './types';

/** A Redis command as plain data: name and arguments. */
export type Command = readonly [string, ...string[]];

export const ERRORS_MAXLEN = 10000;

/**
 * CONTRACT 5.1, with one change of shape: the process image keys are written by ONE
 * `MSET` of every key and its last JSON (a key written by two mappings, or by many items of an
 * array body, ends with the later one's value, as with one `SET` each in order; it is named once,
 * where it first comes), then one `XADD` per point, in order. A `MULTI` is applied at once, so no
 * reader sees the difference; it saves about 13 % of the CPU time of a 10-mapping request
 * (ioredis builds, times and parses every command separately), and an array body of 100 readings
 * of 10 addresses sends 10 keys, not 1,000. With `byScript` the `XADD`s are run, in the same
 * order, by `APPEND_SCRIPT` (one `EVAL` in the `MULTI` per `SCRIPT_ENTRIES` points).
 */
export const writeCommands = (points: readonly MappedPoint[], source: string, maxLen: number, traceparent?: string, byScript = false): Command[] => {
  if (points.length === 0) return [];
  const max = String(maxLen);
  const image = new Map<string, string>();
  for (const { point, json } of points) image.set(processImageKey(point.casdu, point.ioa), json);
  const mset: [string, ...string[]] = ['mset'];
  for (const [key, json] of image) mset.push(key, json);
  return [mset, ...(byScript ? appendScripts(points, source, max, traceparent) : points.map(({ point, json }) => xaddOf(max, String(point.casdu), String(point.ioa), source, json, traceparent)))];
};

const xaddOf = (max: string, casdu: string, ioa: string, source: string, json: string, traceparent: string | undefined): Command => {
  const xadd: [string, ...string[]] = ['xadd', UPDATES_STREAM, 'MAXLEN', '~', max, '*', 'casdu', casdu, 'ioa', ioa, 'source', source, 'data', json];
  // CONTRACT 9: the write's trace context, only when tracing is on and the write is sampled
  if (traceparent !== undefined) xadd.push('traceparent', traceparent);
  return xadd;
};

/**
 * The same `XADD`s, run by one script inside the `MULTI` (README "How a write reaches Redis"):
 * ioredis builds, times and parses every command of a `MULTI` on its own, and at one `XADD` a data
 * point that was most of an array body's CPU time. The script takes the stream as its key and, as
 * arguments, `MAXLEN`, the source, the traceparent (empty for none), then casdu, ioa and data of
 * each entry in order, and appends exactly the entries `xaddOf` would. `#!lua`: a script of Redis
 * 7's kind, flags declared (none: a write, not `allow-oom`). Redis 7 decides out-of-memory once for
 * the whole `EXEC` (tested), so the transaction stays all or nothing. Only sent on a connection
 * where the probe ran (Redis 7, `EVAL` allowed); else the `XADD`s are sent as they are.
 */
export const APPEND_SCRIPT = `#!lua
local key, maxlen, source, tp = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
for i = 4, #ARGV, 3 do
  if tp == '' then
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'casdu', ARGV[i], 'ioa', ARGV[i + 1], 'source', source, 'data', ARGV[i + 2])
  else
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'casdu', ARGV[i], 'ioa', ARGV[i + 1], 'source', source, 'data', ARGV[i + 2], 'traceparent', tp)
  end
end
return (#ARGV - 3) / 3
`;

/** Entries per `EVAL`: its argument list stays bounded (three arguments an entry) whatever `Http:MaxBatchItems` is. */
export const SCRIPT_ENTRIES = 10000;

const appendScripts = (points: readonly MappedPoint[], source: string, max: string, traceparent: string | undefined): Command[] => {
  const scripts: Command[] = [];
  for (let start = 0; start < points.length; start += SCRIPT_ENTRIES) {
    const call: [string, ...string[]] = ['eval', APPEND_SCRIPT, '1', UPDATES_STREAM, max, source, traceparent ?? ''];
    const end = Math.min(points.length, start + SCRIPT_ENTRIES);
    for (let i = start; i < end; i++) {
      const { point, json } = points[i]!;
      call.push(String(point.casdu), String(point.ioa), json);
    }
    scripts.push(call);
  }
  return scripts;
};

/** The commands with every append script replaced by the `XADD`s it runs (a connection that may not run it). */
export const withoutScripts = (commands: readonly Command[]): Command[] =>
  commands.flatMap((c): Command[] => {
    if (c[0] !== 'eval' || c[1] !== APPEND_SCRIPT) return [c];
    const [, , , , max, source, tp, ...entries] = c as readonly string[];
    const xadds: Command[] = [];
    for (let i = 0; i < entries.length; i += 3) xadds.push(xaddOf(max!, entries[i]!, entries[i + 1]!, source!, entries[i + 2]!, tp === '' ? undefined : tp));
    return xadds;
  });

/** True when the commands hold an append script. */
export const hasScript = (commands: readonly Command[]): boolean => commands.some((c) => c[0] === 'eval' && c[1] === APPEND_SCRIPT);

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
