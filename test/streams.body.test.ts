import { toBatch } from '../src/streams/read/batches';
import { backlogBatch } from '../src/streams/webhook/backlogEntry';
import { bodyText, DATAPOINTS, defaultBodyOver, formatOf, prepareBody, requestBody, storedPoints, withBody, type Body, type BodyFormat } from '../src/streams/webhook/body';
import { interrogationBatch, interrogationRequest } from '../src/streams/webhook/interrogation';

/** The one body module (src/streams/webhook/body.ts): what every sender's body is made from, and made once per batch and format. */
const points = ['{"casdu":1,"ioa":1,"value":1}', '{"casdu":1,"ioa":2,"value":"é"}'];
const live = () => toBatch(points.map((json, i) => ({ id: `1-${i}`, json })));

it('a live batch: {"datapoints":[…]} of its points as stored, JSON, and the same bytes for every webhook of the format and every retry', () => {
  const b = live();
  const body = requestBody(b);
  expect([bodyText(body), body.contentType]).toEqual([`{"datapoints":[${points.join(',')}]}`, 'application/json']);
  expect(requestBody(b)).toBe(body);
});

it('prepared for the default format: the batch\'s own default body, whichever format object asks', async () => {
  const b = live();
  const body = requestBody(b);
  expect(await prepareBody(formatOf({ url: 'http://x/', headers: {}, secrets: [] }), b)).toEqual({ kind: 'body', body, skipped: 0 });
  const other: BodyFormat = { type: 'datapoints', maxBodyBytes: 1 << 24 };
  expect(((await prepareBody(other, b)) as { body: Body }).body).toBe(body);
});

it('an interrogation\'s request: the points as bytes, copied once into the memory given, with its cause; the same text as from strings', () => {
  const given: Buffer[] = [];
  const b = interrogationBatch('periodic', '5-0', 2, points.map((p) => Buffer.from(p)));
  const body = requestBody(b, (n) => (given.push(Buffer.alloc(n)), given[given.length - 1]!));
  expect(bodyText(body)).toBe(`{"datapoints":[${points.join(',')}],"cause":"periodic"}`);
  expect(given).toHaveLength(1);
  expect(body.bytes).toBe(given[0]);
  expect(b.webhookId).toBe('pi-5-0-2');
  // made ahead on its thread: the points go, the body stays and is sent as it is
  const ahead = withBody(b, requestBody(b));
  expect(ahead.content.kind).toBe('stored');
  expect(requestBody(ahead).bytes).toBe(requestBody(b).bytes);
});

it('a resend carries its cause; an empty batch is an empty list', () => {
  expect(bodyText(requestBody({ ...live(), cause: 'resend' }))).toBe(`{"datapoints":[${points.join(',')}],"cause":"resend"}`);
  expect(bodyText(requestBody({ ...live(), content: { kind: 'text', points: '' } }))).toBe('{"datapoints":[]}');
});

it('a backlog entry is sent as stored, with its content type; its size is read from its body', () => {
  const b = backlogBatch({ id: '9-0', webhookId: '1-0_1-1', body: '{"datapoints":[{"a":1},{"a":2}]}', contentType: 'text/plain', traces: '' });
  expect([bodyText(requestBody(b)), requestBody(b).contentType, b.size, b.first]).toEqual(['{"datapoints":[{"a":1},{"a":2}]}', 'text/plain', 2, '1-0']);
  expect([storedPoints('not json'), storedPoints('{"datapoints":3}'), storedPoints('[]')]).toEqual([0, 0, 0]);
});

it('a request whose body stays on its thread is never rendered here', () => {
  expect(() => requestBody(interrogationRequest('interrogation', '5-0', 1, 3))).toThrow(/interrogation thread/);
});

describe('a webhook\'s format (CONTRACT 4.7), what each renders, and what is kept', () => {
  const hook = (format: Record<string, unknown> | undefined, url = 'http://x/in') => formatOf({ url, headers: {}, secrets: [], ...(format !== undefined ? { format } : {}) } as never);
  const bytesBatch = (cause?: 'interrogation' | 'periodic' | 'resend') => ({ ...live(), content: { kind: 'bytes' as const, points: points.map((p) => Buffer.from(p)) }, ...(cause ? { cause } : {}) });

  it('webhooks whose format renders the same bytes share one format object; others do not', () => {
    expect([hook(undefined), hook({ type: 'datapoints' })]).toEqual([DATAPOINTS, DATAPOINTS]);
    expect(hook(undefined)).toBe(DATAPOINTS);
    expect(hook({ type: 'datapoints' })).toBe(DATAPOINTS);
    expect(hook({ type: 'ndjson' })).toBe(hook({ type: 'ndjson' }));
    expect(hook({ type: 'ndjson' })).toEqual({ type: 'ndjson', maxBodyBytes: 16 * 1024 * 1024 });
    expect(hook({ type: 'influx-line', measurement: 'm' }, 'http://a/write?precision=s')).toBe(hook({ type: 'influx-line', measurement: 'm' }, 'http://b/write?precision=s'));
    expect(hook({ type: 'influx-line', measurement: 'm' }, 'http://a/write?precision=s')).toEqual({ type: 'influx-line', measurement: 'm', precision: 's', maxBodyBytes: 16 * 1024 * 1024 });
    expect(hook({ type: 'influx-line', measurement: 'm' }, 'http://a/write?precision=s')).not.toBe(hook({ type: 'influx-line', measurement: 'm' }, 'http://a/write?precision=ms'));
    expect(hook({ type: 'influx-line', measurement: 'm' })).not.toBe(hook({ type: 'influx-line', measurement: 'n' }));
    // the same JSONata settings written in another order are the same format; a URL's precision is not JSONata's business
    const j = hook({ type: 'jsonata', expression: 'datapoints', output: 'json' }, 'http://a/?precision=s');
    expect(hook({ output: 'json', expression: 'datapoints', type: 'jsonata' }, 'http://b/?precision=ms')).toBe(j);
    expect(hook({ type: 'jsonata', expression: 'datapoints', output: 'ndjson' })).not.toBe(j);
  });

  it('the default body of text or bytes with each cause\'s ending; a stored body as stored, whatever the format', async () => {
    for (const cause of [undefined, 'interrogation', 'periodic', 'resend'] as const) {
      const end = cause === undefined ? ']}' : `],"cause":"${cause}"}`;
      expect(bodyText(requestBody({ ...live(), ...(cause ? { cause } : {}) }))).toBe(`{"datapoints":[${points.join(',')}${end}`);
      expect(bodyText(requestBody(bytesBatch(cause)))).toBe(`{"datapoints":[${points.join(',')}${end}`);
    }
    for (const body of ['a\nb\n', Buffer.from('a\nb\n')]) {
      const stored = { ...live(), content: { kind: 'stored' as const, body, contentType: 'application/x-ndjson' } };
      const p = (await prepareBody(hook({ type: 'ndjson' }), stored)) as { body: Body };
      expect([bodyText(p.body), p.body.contentType, bodyText(requestBody(stored))]).toEqual(['a\nb\n', 'application/x-ndjson', 'a\nb\n']);
    }
  });

  it('ndjson, line protocol and JSONata from text and from bytes, each with its content type', async () => {
    const nd = hook({ type: 'ndjson' });
    const line = hook({ type: 'influx-line', measurement: 'm' }, 'http://a/write?precision=ms');
    const j = hook({ type: 'jsonata', expression: '{"n": $count(datapoints), "cause": cause}' });
    for (const b of [live(), bytesBatch()]) {
      expect(await prepareBody(nd, b)).toEqual({ kind: 'body', body: { bytes: Buffer.from(`${points.join('\n')}\n`), contentType: 'application/x-ndjson' }, skipped: 0 });
      expect(await prepareBody(line, b)).toEqual({ kind: 'body', body: { bytes: Buffer.from('m,casdu=1,ioa=1 value=1 1\nm,casdu=1,ioa=2 value_text="é" 1\n'), contentType: 'text/plain; charset=utf-8' }, skipped: 0 });
    }
    const asked = bytesBatch('interrogation');
    expect(await prepareBody(j, asked)).toEqual({ kind: 'body', body: { bytes: Buffer.from('{"n":2,"cause":"interrogation"}'), contentType: 'application/json' }, skipped: 0 });
    // an interrogation's or periodic request's points have no stream entry: no time
    for (const cause of ['interrogation', 'periodic'] as const) {
      expect(bodyText(((await prepareBody(line, bytesBatch(cause))) as { body: Body }).body)).toBe('m,casdu=1,ioa=1 value=1\nm,casdu=1,ioa=2 value_text="é"\n');
    }
    expect(bodyText(((await prepareBody(line, bytesBatch('resend'))) as { body: Body }).body)).toBe('m,casdu=1,ioa=1 value=1 1\nm,casdu=1,ioa=2 value_text="é" 1\n');
  });

  it('rendered once: the same result for every call and retry; the batch carrying it sends it; nothing and a failure are told apart', async () => {
    const nd = hook({ type: 'ndjson' });
    const b = live();
    const first = prepareBody(nd, b);
    expect(prepareBody(nd, b)).toBe(first);
    const r = await first;
    expect(await prepareBody(nd, b)).toBe(r);
    // the batch handed on with its body sends exactly it; the batch itself still has its default body
    expect(requestBody(withBody(b, (r as { body: Body }).body)).bytes).toBe((r as { body: Body }).body.bytes);
    expect(requestBody(withBody(b, (r as { body: Body }).body)).contentType).toBe('application/x-ndjson');
    expect(requestBody(b).contentType).toBe('application/json');
    const nothing = hook({ type: 'jsonata', expression: 'nothing.here' });
    expect(await prepareBody(nothing, b)).toEqual({ kind: 'nothing', skipped: 0 });
    const failing = hook({ type: 'jsonata', expression: '$error("no")' });
    expect(await prepareBody(failing, b)).toEqual({ kind: 'failed', error: 'no (D3137 at character 7)' });
    expect(await prepareBody(nd, { ...b, content: { kind: 'text', points: '' } })).toEqual({ kind: 'nothing', skipped: 0 });
    // the default body (what a batch that cannot be rendered is dead-lettered with) is made once
    expect(requestBody(b)).toBe(requestBody(b));
  });

  it('prepared: the default body for the default format; a stored body as stored for any format; a body on its thread is a failure here', async () => {
    const nd = hook({ type: 'ndjson' });
    expect(await prepareBody({ type: 'datapoints', maxBodyBytes: 1 << 24 }, live())).toEqual({ kind: 'body', body: { bytes: Buffer.from(`{"datapoints":[${points.join(',')}]}`), contentType: 'application/json' }, skipped: 0 });
    const stored = { ...live(), content: { kind: 'stored' as const, body: '{"datapoints":[{"a":1}]}', contentType: 'application/json' } };
    expect(await prepareBody(nd, stored)).toEqual({ kind: 'body', body: { bytes: Buffer.from('{"datapoints":[{"a":1}]}'), contentType: 'application/json' }, skipped: 0 });
    expect(Buffer.isBuffer(requestBody(stored).bytes)).toBe(true);
    expect(await prepareBody(nd, interrogationRequest('interrogation', '5-0', 1, 3))).toEqual({ kind: 'failed', error: expect.stringMatching(/interrogation thread/) });
  });

  it('counts the points of a stored body: its datapoints, or its lines for NDJSON and text (a first empty line too)', () => {
    expect([storedPoints('{"datapoints":[1,2]}'), storedPoints('null'), storedPoints('{"datapoints":[1]}', 'text/plain')]).toEqual([2, 0, 1]);
    expect([storedPoints('\na\n', 'application/x-ndjson; charset=utf-8'), storedPoints('a\nb\nc\n', 'text/plain; charset=utf-8'), storedPoints('a\nb\n', 'application/xml')]).toEqual([2, 3, 0]);
  });
});

it('CONTRACT 4.7 "Size": a text batch\'s default body over the limit is told by its length before it is made, counted only near the limit', () => {
  const b = live();
  const n = requestBody(b).bytes.length;
  // "é" is 2 bytes: counted, not guessed from the characters
  expect([defaultBodyOver(b, n), defaultBodyOver(b, n - 1), defaultBodyOver(b, 10 * n)]).toEqual([undefined, n, undefined]);
  expect(defaultBodyOver({ ...b, cause: 'resend' }, n)).toBe(n + ',"cause":"resend"'.length);
  expect(defaultBodyOver(backlogBatch({ id: '9-0', webhookId: '1-0_1-1', body: 'x'.repeat(100), contentType: 'text/plain', traces: '' }), 1)).toBeUndefined();
});
