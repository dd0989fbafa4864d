import { toBatch } from '../src/streams/read/batches';
import { backlogBatch } from '../src/streams/webhook/backlogEntry';
import { bodyText, DATAPOINTS, formatOf, renderBody, renderedNow, storedPoints, type BodyFormat } from '../src/streams/webhook/body';
import { interrogationBatch, interrogationRequest } from '../src/streams/webhook/interrogation';

/** The one body module (src/streams/webhook/body.ts): what every sender's body is made from, and made once per batch and format. */
const points = ['{"casdu":1,"ioa":1,"value":1}', '{"casdu":1,"ioa":2,"value":"é"}'];
const live = () => toBatch(points.map((json, i) => ({ id: `1-${i}`, json })));

it('a live batch: {"datapoints":[…]} of its points as stored, JSON, and the same bytes for every webhook of the format and every retry', () => {
  const b = live();
  const body = renderBody(DATAPOINTS, b);
  expect([bodyText(body), body.contentType]).toEqual([`{"datapoints":[${points.join(',')}]}`, 'application/json']);
  expect(renderBody(DATAPOINTS, b)).toBe(body);
  expect(renderBody(formatOf({ url: 'http://x/', headers: {}, secrets: [] }), b)).toBe(body);
  // another format object renders (and keeps) its own
  const other: BodyFormat = { type: 'datapoints' };
  expect(renderBody(other, b)).not.toBe(body);
  expect(renderBody(other, b).bytes.equals(body.bytes)).toBe(true);
});

it('an interrogation\'s request: the points as bytes, copied once into the memory given, with its cause; the same text as from strings', () => {
  const given: Buffer[] = [];
  const b = interrogationBatch('periodic', '5-0', 2, points.map((p) => Buffer.from(p)));
  const body = renderBody(DATAPOINTS, b, (n) => (given.push(Buffer.alloc(n)), given[given.length - 1]!));
  expect(bodyText(body)).toBe(`{"datapoints":[${points.join(',')}],"cause":"periodic"}`);
  expect(given).toHaveLength(1);
  expect(body.bytes).toBe(given[0]);
  expect(b.webhookId).toBe('pi-5-0-2');
  // made ahead on its thread: the points go, the body stays and is sent as it is
  const ahead = renderedNow(DATAPOINTS, b);
  expect(ahead.content.kind).toBe('stored');
  expect(renderBody(DATAPOINTS, ahead).bytes).toBe(renderBody(DATAPOINTS, b).bytes);
});

it('a resend carries its cause; an empty batch is an empty list', () => {
  expect(bodyText(renderBody(DATAPOINTS, { ...live(), cause: 'resend' }))).toBe(`{"datapoints":[${points.join(',')}],"cause":"resend"}`);
  expect(bodyText(renderBody(DATAPOINTS, { ...live(), content: { kind: 'text', points: '' } }))).toBe('{"datapoints":[]}');
});

it('a backlog entry is sent as stored, with its content type; its size is read from its body', () => {
  const b = backlogBatch({ id: '9-0', webhookId: '1-0_1-1', body: '{"datapoints":[{"a":1},{"a":2}]}', contentType: 'text/plain', traces: '' });
  expect([bodyText(renderBody(DATAPOINTS, b)), renderBody(DATAPOINTS, b).contentType, b.size, b.first]).toEqual(['{"datapoints":[{"a":1},{"a":2}]}', 'text/plain', 2, '1-0']);
  expect([storedPoints('not json'), storedPoints('{"datapoints":3}'), storedPoints('[]')]).toEqual([0, 0, 0]);
});

it('a request whose body stays on its thread is never rendered here', () => {
  expect(() => renderBody(DATAPOINTS, interrogationRequest('interrogation', '5-0', 1, 3))).toThrow(/interrogation thread/);
});
