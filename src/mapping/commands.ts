import type { MappingFailures, MappedPoint } from './apply';
import { processImageKey, UPDATES_STREAM, type Mapping } from './types';

/** A Redis command as plain data: name and arguments. */
export type Command = readonly [string, ...string[]];

export const ERRORS_MAXLEN = 10000;
export const errorsStream = (connectorId: string): string => `connectors:${connectorId}:errors`;

/** CONTRACT 5.1: per mapping, in order, SET of its key and XADD to the update stream. */
export const writeCommands = (points: readonly MappedPoint[], source: string, maxLen: number): Command[] => {
  const max = String(maxLen);
  return points.flatMap(({ point, json }): Command[] => {
    const casdu = String(point.casdu);
    const ioa = String(point.ioa);
    return [
      ['set', processImageKey(point.casdu, point.ioa), json],
      ['xadd', UPDATES_STREAM, 'MAXLEN', '~', max, '*', 'casdu', casdu, 'ioa', ioa, 'source', source, 'data', json],
    ];
  });
};

/** CONTRACT 5.1: one error-stream entry per failed mapping, and nothing else. */
export const errorCommands = (connectorId: string, topic: string, f: MappingFailures): Command[] =>
  f.failed.map(({ mapping, error }) => [
    'xadd', errorsStream(connectorId), 'MAXLEN', '~', String(ERRORS_MAXLEN), '*',
    'topic', topic, 'signalId', mapping.name, 'error', error, 'casdu', String(mapping.casdu), 'ioa', String(mapping.ioa),
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
