import type { MappingFailures, MappedPoint } from './apply';

/**
 * CONTRACT 5.1, 5.5: in a 200 `succeeded` holds names, in a 422 objects — on purpose. `items`:
 * an array body's length; undefined for one object, answered exactly as before.
 */
export const okBody = (topic: string, points: readonly MappedPoint[], items?: number) =>
  items === undefined
    ? { topic, succeeded: points.map((p) => p.mapping.name) }
    // every item gave one point per mapping, in mapping order: the first item's name each once
    : { topic, items, succeeded: points.slice(0, points.length / items).map((p) => p.mapping.name) };

export const failureBody = (topic: string, f: MappingFailures, items?: number) => {
  // the topic's mappings: those that succeeded (on every item) and those that failed (on any)
  const mappings = f.succeeded.length + new Set(f.failed.map((x) => x.mapping)).size;
  return {
    topic,
    message: `${f.failed.length} of ${(items ?? 1) * mappings} mappings failed`,
    ...(items === undefined ? {} : { items }),
    failed: f.failed.map((x) => (x.item === undefined ? { signalId: x.mapping.name, error: x.error } : { signalId: x.mapping.name, error: x.error, item: x.item })),
    succeeded: f.succeeded.map((m) => ({ signalId: m.name })),
  };
};
