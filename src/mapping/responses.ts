import type { MappingFailures, MappedPoint } from './apply';
import type { Mapping } from './types';

/**
 * CONTRACT 5.1, 5.5: in a 200 `succeeded` holds names, in a 422 objects — on purpose. `items`:
 * an array body's length; undefined for one object, answered exactly as before.
 */
export const okBody = (topic: string, points: readonly MappedPoint[], items?: number) =>
  items === undefined ? { topic, succeeded: points.map((p) => p.mapping.name) } : { topic, items, succeeded: namesOnce(points) };

/** Each mapping's name once, in the order the points give them (the first item's, then the `whole` mappings'). */
const namesOnce = (points: readonly MappedPoint[]): string[] => {
  const seen = new Set<Mapping>();
  const names: string[] = [];
  for (const p of points) {
    if (seen.has(p.mapping)) continue;
    seen.add(p.mapping);
    names.push(p.mapping.name);
  }
  return names;
};

/** CONTRACT 5.5: what a 422 for an array body adds when every mapping failed on every item. */
export const EACH_ITEM_HINT =
  'each mapping was applied to every item of the array; for an array of devices, where each mapping picks its own, give the mapping "array": "whole" and a path that selects its item ([id=T1].temp_raw)';

export const failureBody = (topic: string, f: MappingFailures, items?: number) => {
  // the topic's mappings: those that succeeded (on every item) and those that failed (on any);
  // M counts N × the `each` mappings plus the `whole` ones
  const mappings = [...f.succeeded, ...new Set(f.failed.map((x) => x.mapping))];
  const of = mappings.reduce((n, m) => n + (items === undefined || m.array === 'whole' ? 1 : items), 0);
  const hint = items !== undefined && f.failed.length === of && mappings.some((m) => m.array !== 'whole');
  return {
    topic,
    message: `${f.failed.length} of ${of} mappings failed${hint ? `: ${EACH_ITEM_HINT}` : ''}`,
    ...(items === undefined ? {} : { items }),
    failed: f.failed.map((x) => (x.item === undefined ? { signalId: x.mapping.name, error: x.error } : { signalId: x.mapping.name, error: x.error, item: x.item })),
    succeeded: f.succeeded.map((m) => ({ signalId: m.name })),
  };
};
