import type { PointFilter } from '../src/config/webhookSettings';
import { toBatch } from '../src/streams/read/batches';
import { bodyText, DATAPOINTS, requestBody } from '../src/streams/webhook/body';
import type { DecodedEntry } from '../src/streams/read/entries';
import { matches, partFor } from '../src/streams/webhook/filter';

/** The invariants at the top of src/streams/webhook/filter.ts, one test each. */
const point = (id: string, casdu?: number, ioa?: number, type?: number): DecodedEntry => ({
  id, json: JSON.stringify({ casdu, ioa, type }), casdu, ioa, type,
});
const billing: PointFilter = { casdu: [[10, 10], [20, 29]], ioa: [[1000, 1999]] };

it('1: a point matches when it matches every field given; a field left out matches everything; a point without the value matches no range', () => {
  expect(matches(billing, point('1-0', 10, 1000, 36))).toBe(true);
  expect(matches(billing, point('1-0', 25, 1999))).toBe(true);
  expect(matches(billing, point('1-0', 11, 1500))).toBe(false);
  expect(matches(billing, point('1-0', 20, 2000))).toBe(false);
  expect(matches({}, point('1-0'))).toBe(true);
  expect(matches({ types: [[36, 36]] }, point('1-0', 1, 1))).toBe(false);
  expect(matches({ types: [[36, 36]] }, point('1-0', 1, 1, 36))).toBe(true);
  expect(matches({ casdu: [[0, 65535]] }, {})).toBe(false);
});

it('2: the part holds the matching entries in stream order, and the batch\'s record key and marks; none matching, no part', () => {
  const es = [point('1-0', 10, 1), point('1-1', 11, 1000), point('1-2', 20, 1500), point('1-3', 10, 1999), point('1-4', 30, 1000)];
  const batch = toBatch(es, { first: '1-0', last: '1-4', done: new Set(['0 http://a/']) });
  const part = partFor(billing, es, batch)!;
  expect(part.webhookId).toBe('1-2_1-3');
  expect(part.ids).toEqual(['1-2', '1-3']);
  expect(part.size).toBe(2);
  expect(JSON.parse(bodyText(requestBody(part)))).toEqual({ datapoints: [{ casdu: 20, ioa: 1500 }, { casdu: 10, ioa: 1999 }] });
  expect([part.first, [...part.done], part.recorded]).toEqual(['1-0', ['0 http://a/'], true]);
  expect(partFor({ casdu: [[99, 99]] }, es, batch)).toBeNull();
});

it('3: the recorded webhook-id stays while every matching entry lies within it (entries deleted meanwhile); a match outside it gets the computed id', () => {
  const es = [point('1-0', 10, 1), point('1-3', 10, 1999)]; // 1-2 (it matched) was deleted from the stream
  const batch = toBatch(es, { first: '1-0', last: '1-4', done: new Set() });
  expect(partFor(billing, es, batch, '1-2_1-3')!.webhookId).toBe('1-2_1-3');
  expect(partFor(billing, [...es, point('1-4', 10, 1000)], batch, '1-2_1-3')!.webhookId).toBe('1-3_1-4');
  expect(partFor(billing, es, batch, 'garbage')!.webhookId).toBe('1-3_1-3');
});
