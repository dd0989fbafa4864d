import type { MappingFailures, MappedPoint } from './apply';

/** CONTRACT 5.1: in a 200 `succeeded` holds names, in a 422 objects — on purpose. */
export const okBody = (topic: string, points: readonly MappedPoint[]) => ({
  topic,
  succeeded: points.map((p) => p.mapping.name),
});

export const failureBody = (topic: string, f: MappingFailures) => ({
  topic,
  message: `${f.failed.length} of ${f.failed.length + f.succeeded.length} mappings failed`,
  failed: f.failed.map((x) => ({ signalId: x.mapping.name, error: x.error })),
  succeeded: f.succeeded.map((m) => ({ signalId: m.name })),
});
