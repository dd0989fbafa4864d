import * as E from 'fp-ts/Either';
import { applyMappings } from '../src/mapping/apply';
import { writeCommands } from '../src/mapping/commands';
import { compilePath } from '../src/mapping/path';
import type { Mapping } from '../src/mapping/types';
import { backlogBatch, decodeBacklogEntry, encodeTraces } from '../src/streams/webhook/backlogEntry';
import { toBatch } from '../src/streams/read/batches';
import { decodeEntry, type DecodedEntry } from '../src/streams/read/entries';
import { partFor } from '../src/streams/webhook/filter';
import { tracingProtocol } from '../src/runtime/tracing';

/** CONTRACT 9, piece by piece: where a trace context is stored, read, carried and kept. */
const TP = (n: number) => `00-${String(n).padStart(32, '0')}-${String(n).padStart(16, '0')}-01`;
const entry = (id: string, ioa: number, traceparent?: string): DecodedEntry => ({ id, json: `{"ioa":${ioa}}`, casdu: 1, ioa, type: 36, traceparent });

it('a write stores its context as field traceparent of each XADD (after data), and nothing without one', () => {
  const path = compilePath('v');
  if (E.isLeft(path)) throw new Error('unexpected');
  const mapping: Mapping = { name: 'a', topic: 't', casdu: 1, ioa: 7, type: 36, valuePath: path.right, valueType: 'float', array: 'each' };
  const r = applyMappings([mapping, { ...mapping, ioa: 8 }], { v: 1 }, '2026-11-26T00:00:00.000Z', 'src');
  if (E.isLeft(r)) throw new Error('unexpected');
  const traced = writeCommands(r.right, 'src', 100, TP(1));
  expect(traced.slice(1).map((c) => c.slice(-4))).toEqual(Array(2).fill(['data', expect.any(String), 'traceparent', TP(1)]));
  expect(writeCommands(r.right, 'src', 100).slice(1).map((c) => c.includes('traceparent'))).toEqual([false, false]);
});

it('an entry\'s traceparent field is read with it; a batch carries the contexts of the entries that have one, and no field when none has', () => {
  const read = decodeEntry({ id: '1-0', fields: ['casdu', '1', 'ioa', '2', 'source', 's', 'data', '{"casdu":1,"ioa":2}', 'traceparent', TP(5)] });
  expect(read).toMatchObject({ ok: true, entry: { id: '1-0', traceparent: TP(5) } });
  // another writer's field that is no W3C trace context is not carried on (nor into a backlog entry)
  for (const foreign of ['not a context', `${TP(5)} extra`, 'x'.repeat(10000)]) {
    const other = decodeEntry({ id: '1-0', fields: ['data', '{"casdu":1,"ioa":2}', 'traceparent', foreign] });
    expect(other.ok && other.entry.traceparent).toBeUndefined();
  }
  const batch = toBatch([entry('1-0', 1, TP(1)), entry('1-1', 2), entry('1-2', 3, TP(3))]);
  expect(batch.traces).toEqual([{ id: '1-0', traceparent: TP(1) }, { id: '1-2', traceparent: TP(3) }]);
  expect('traces' in toBatch([entry('1-0', 1), entry('1-1', 2)])).toBe(false);
});

it('a filtered webhook\'s part carries the contexts of its own entries only', () => {
  const es = [entry('1-0', 1, TP(1)), entry('1-1', 2, TP(2)), entry('1-2', 3, TP(3))];
  const part = partFor({ ioa: [[2, 3]] }, es, toBatch(es))!;
  expect(part.traces).toEqual([{ id: '1-1', traceparent: TP(2) }, { id: '1-2', traceparent: TP(3) }]);
});

it('the backlog keeps a batch\'s contexts as id/traceparent pairs, and a redriven or replayed batch gets them back', () => {
  const traces = [{ id: '1-0', traceparent: TP(1) }, { id: '1-2', traceparent: TP(3) }];
  const stored = encodeTraces(traces);
  expect(stored).toBe(`1-0 ${TP(1)} 1-2 ${TP(3)}`);
  const e = decodeBacklogEntry('9-0', ['webhook', '0', 'url', 'http://a/', 'webhookId', '1-0_1-2', 'body', '{"datapoints":[]}', 'traces', stored]);
  expect(backlogBatch(e).traces).toEqual(traces);
  // an entry written before tracing, or without it
  const old = decodeBacklogEntry('9-1', ['webhook', '0', 'url', 'http://a/', 'webhookId', '1-0_1-2', 'body', '{}']);
  expect(old.traces).toBe('');
  expect('traces' in backlogBatch(old)).toBe(false);
});

it('tracing is on with an OTLP endpoint (or the traces one), off with OTEL_SDK_DISABLED; http/protobuf unless http/json is asked for', () => {
  expect(tracingProtocol({})).toEqual(E.right(undefined));
  expect(tracingProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual(E.right('http/protobuf'));
  expect(tracingProtocol({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual(E.right('http/protobuf'));
  expect(tracingProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' })).toEqual(E.right(undefined));
  expect(tracingProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual(E.right('http/json'));
  // the traces variant wins over the general one
  expect(tracingProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toEqual(E.right('http/json'));
  expect(tracingProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toEqual(
    E.left('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is "grpc": traces are exported over OTLP/HTTP only ("http/protobuf", the default, or "http/json")'),
  );
});
