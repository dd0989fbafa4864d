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
 * of 10 addresses sends 10 keys, not 1,000.
 */
export const writeCommands = (points: readonly MappedPoint[], source: string, maxLen: number, traceparent?: string): Command[] => {
  const max = String(maxLen);
  const image = new Map<string, string>();
  const xadds: Command[] = [];
  for (const { point, json } of points) {
    image.set(processImageKey(point.casdu, point.ioa), json);
    const xadd: [string, ...string[]] = ['xadd', UPDATES_STREAM, 'MAXLEN', '~', max, '*', 'casdu', String(point.casdu), 'ioa', String(point.ioa), 'source', source, 'data', json];
    // CONTRACT 9: the write's trace context, only when tracing is on and the write is sampled
    if (traceparent !== undefined) xadd.push('traceparent', traceparent);
    xadds.push(xadd);
  }
  const mset: [string, ...string[]] = ['mset'];
  for (const [key, json] of image) mset.push(key, json);
  return points.length === 0 ? [] : [mset, ...xadds];
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
