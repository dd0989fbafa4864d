import fc from 'fast-check';
import * as E from 'fp-ts/Either';
import { parseManagedSettings } from '../src/config/managed';
import { escapeKey, escapeMeasurement, escapeStringField, pointLine, timeIn } from '../src/streams/webhook/lineProtocol';
import { bodyFormatOf, entryMs, LINE_CONTENT_TYPE, NDJSON_CONTENT_TYPE, ndjsonBytes } from '../src/streams/webhook/formats';
import { compileJsonata, jsonataText } from '../src/streams/webhook/jsonataEval';
import { formatOf, prepareBody, storedPoints } from '../src/streams/webhook/body';
import { toBatch } from '../src/streams/read/batches';

/** CONTRACT 4.7: the line protocol's escaping and values rule by rule, the point splitter, JSONata's outputs, the settings' errors. */

const O = { measurement: 'datapoints', precision: 'ms' as const };

describe('line protocol', () => {
  it.each([
    ['a measurement: commas and spaces escaped, a backslash elsewhere as it is', escapeMeasurement('my plant,a b=c\\d'), 'my\\ plant\\,a\\ b=c\\d'],
    ['a key or tag value: commas, spaces and = escaped', escapeKey('a,b c=d'), 'a\\,b\\ c\\=d'],
    ['trailing backslashes dropped', escapeKey('tail\\\\'), 'tail'],
    ['a backslash inside kept', escapeKey('a\\b'), 'a\\b'],
    ['line breaks become spaces (then escaped)', escapeKey('a\nb\rc'), 'a\\ b\\ c'],
    ['a string field: quotes and backslashes escaped', escapeStringField('say "hi" \\ ok'), '"say \\"hi\\" \\\\ ok"'],
  ])('%s', (_what, got, expected) => expect(got).toBe(expected));

  it('tags in order casdu, ioa, source, type; value a float; extra fields in the object\'s order, of number, boolean and string only', () => {
    const p = { type: 36, quality: 'good', value: 21.5, ioa: 5, nested: { a: 1 }, list: [1], casdu: 1, source: 'plant a', flag: false, n: 3, nothing: null, timestamp: '2026-11-21T10:15:00.123Z' };
    expect(pointLine(p, O, undefined)).toBe('datapoints,casdu=1,ioa=5,source=plant\\ a,type=36 value=21.5,quality="good",flag=false,n=3 1795256100123\n');
  });

  it.each([
    [true, 'value=1'], [false, 'value=0'], [3, 'value=3'], [-5, 'value=-5'], [1e21, 'value=1e+21'], [0.1, 'value=0.1'], ['OPEN', 'value_text="OPEN"'],
  ])('value %p is written %s', (value, field) => expect(pointLine({ casdu: 1, ioa: 2, value }, O, undefined)).toBe(`datapoints,casdu=1,ioa=2 ${field}\n`));

  it.each([[undefined], [null], [{ a: 1 }], [[1]]])('a point whose value is %p cannot be written', (value) =>
    expect(pointLine({ casdu: 1, ioa: 2, value }, O, 1)).toBeUndefined());

  it('source and type left out when absent, null, empty, or empty once trailing backslashes go', () => {
    expect(pointLine({ casdu: 1, ioa: 2, source: '', type: null, value: 1 }, O, undefined)).toBe('datapoints,casdu=1,ioa=2 value=1\n');
    expect(pointLine({ casdu: 1, ioa: 2, source: '\\\\', value: 1 }, O, undefined)).toBe('datapoints,casdu=1,ioa=2 value=1\n');
  });

  it('never extra: casdu, ioa, source, type, value, value_text, timestamp, time', () => {
    expect(pointLine({ casdu: 1, ioa: 2, value: 1, value_text: 'x', time: 5, timestamp: 'bad' }, O, undefined)).toBe('datapoints,casdu=1,ioa=2 value=1\n');
  });

  it('the time: the timestamp in the precision\'s units, truncated; the entry\'s time when the timestamp is missing or bad; none without either', () => {
    expect(timeIn(1795256100123, 'ns')).toBe('1795256100123000000');
    expect(timeIn(1795256100123, 'us')).toBe('1795256100123000');
    expect(timeIn(1795256100123, 'ms')).toBe('1795256100123');
    expect(timeIn(1795256100999, 's')).toBe('1795256100');
    expect(timeIn(0, 'ns')).toBe('0');
    expect(pointLine({ casdu: 1, ioa: 2, value: 1, timestamp: 'not a time' }, O, 42)).toBe('datapoints,casdu=1,ioa=2 value=1 42\n');
    expect(pointLine({ casdu: 1, ioa: 2, value: 1 }, { ...O, precision: 's' }, 1999)).toBe('datapoints,casdu=1,ioa=2 value=1 1\n');
    expect(pointLine({ casdu: 1, ioa: 2, value: 1 }, O, undefined)).toBe('datapoints,casdu=1,ioa=2 value=1\n');
  });
});

describe('a batch in line protocol (body.ts)', () => {
  const entry = (id: string, point: object) => ({ id, json: JSON.stringify(point) });
  const bodyOf = async (url: string, format: object, cause?: 'interrogation') => {
    const batch = toBatch([entry('1700000000123-0', { casdu: 1, ioa: 1, value: 1 }), entry('1700000000456-3', { casdu: 1, ioa: 2, value: 2, timestamp: '2026-11-21T10:15:00.999Z' })]);
    const p = await prepareBody(formatOf({ url, headers: {}, secrets: [], format: format as never }), cause === undefined ? batch : { ...batch, cause });
    return p.kind === 'body' ? p.body.bytes.toString('utf8') : p.kind;
  };
  it('a point without a timestamp gets its stream entry\'s time; the precision is the URL\'s, else the format\'s, else ns', async () => {
    expect(await bodyOf('http://x/?precision=ms', { type: 'influx-line' })).toBe('datapoints,casdu=1,ioa=1 value=1 1700000000123\ndatapoints,casdu=1,ioa=2 value=2 1795256100999\n');
    expect(await bodyOf('http://x/', { type: 'influx-line', precision: 's' })).toBe('datapoints,casdu=1,ioa=1 value=1 1700000000\ndatapoints,casdu=1,ioa=2 value=2 1795256100\n');
    expect(await bodyOf('http://x/', { type: 'influx-line', measurement: 'm' })).toBe('m,casdu=1,ioa=1 value=1 1700000000123000000\nm,casdu=1,ioa=2 value=2 1795256100999000000\n');
  });
  it('an interrogation\'s point without a timestamp gets no time', async () => {
    expect(await bodyOf('http://x/?precision=ms', { type: 'influx-line' }, 'interrogation')).toBe('datapoints,casdu=1,ioa=1 value=1\ndatapoints,casdu=1,ioa=2 value=2 1795256100999\n');
  });
  it('a batch with no point line protocol can write is nothing to send, its points counted', async () => {
    const batch = toBatch([entry('1-0', { casdu: 1, ioa: 1, value: null })]);
    expect(await prepareBody(formatOf({ url: 'http://x/', headers: {}, secrets: [], format: { type: 'influx-line' } }), batch)).toEqual({ kind: 'nothing', skipped: 1 });
  });
});

it('points given as bytes (an interrogation thread\'s batch) render as the same points given as text, in every format', async () => {
  const texts = ['{"casdu":1,"ioa":1,"value":1.5,"timestamp":"2026-11-21T10:15:00.999Z"}', '{"casdu":1,"ioa":2,"value":true,"source":"é, \\"x\\""}'];
  const asText = toBatch(texts.map((json, i) => ({ id: `1700000000123-${i}`, json })));
  const asBytes = { ...asText, content: { kind: 'bytes' as const, points: texts.map((t) => new Uint8Array(Buffer.from(t))) } };
  const formats = [{ type: 'ndjson' }, { type: 'influx-line' }, { type: 'jsonata', expression: '$string(datapoints)' }];
  for (const format of formats) {
    for (const cause of [undefined, 'interrogation' as const]) {
      const f = formatOf({ url: 'http://x/', headers: {}, secrets: [], format: format as never });
      const fromText = await prepareBody(f, { ...asText, ...(cause !== undefined ? { cause } : {}) });
      const fromBytes = await prepareBody(f, { ...asBytes, ...(cause !== undefined ? { cause } : {}) });
      expect([format.type, cause, fromBytes.kind]).toEqual([format.type, cause, 'body']);
      expect(fromBytes).toEqual(fromText);
    }
  }
});

describe('splitting and ndjson', () => {
  /** The lines of an ndjson body: each a line break's end. */
  const lines = (joined: string): string[] => {
    const text = ndjsonBytes(joined).toString('utf8');
    expect(text === '' || text.endsWith('\n')).toBe(true);
    return text === '' ? [] : text.slice(0, -1).split('\n');
  };

  it('splits joined points at the commas between them, not inside strings, objects or arrays', () => {
    const points = [{ a: 'x,y', b: [1, 2], c: { d: ',' } }, { e: 'q"uo\\"te,' }, {}, { f: 'é,ü\u2028,😀', g: [[{}], ','] }];
    expect(lines(points.map((p) => JSON.stringify(p)).join(',')).map((t) => JSON.parse(t) as unknown)).toEqual(points);
    expect(lines('')).toEqual([]);
    expect(ndjsonBytes('')).toEqual(Buffer.alloc(0));
  });

  it('any JSON objects, compact or stored on several lines, come out a line each, parsing to the same objects', () => {
    const objects = fc.array(fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue()), { maxLength: 20 });
    fc.assert(fc.property(objects, fc.boolean(), (points, pretty) => {
      const got = lines(points.map((p) => JSON.stringify(p, null, pretty ? 2 : undefined)).join(','));
      expect(got.map((t) => JSON.parse(t) as unknown)).toEqual(points.map((p) => JSON.parse(JSON.stringify(p)) as unknown));
    }), { numRuns: 300 });
  });

  it('a point stored on several lines becomes one line (its line breaks are whitespace: spaces); others go as they stand', () => {
    expect(lines('{"a": 1,\n "b": "x"},{"c":\r\n2}')).toEqual(['{"a": 1,  "b": "x"}', '{"c":  2}']);
    expect(lines('{"a": 1}')).toEqual(['{"a": 1}']);
    // an escaped line break inside a string stays as written
    expect(lines('{"a":"x\\ny"}')).toEqual(['{"a":"x\\ny"}']);
  });
});

it('a stored body\'s points: its datapoints, or its lines for NDJSON and line protocol; 0 for anything else', () => {
  expect(storedPoints('{"datapoints":[{},{}]}')).toBe(2);
  expect(storedPoints('{"a":1}\n{"a":2}\n{"a":3}\n', 'application/x-ndjson')).toBe(3);
  expect(storedPoints('m,casdu=1 value=1\nm,casdu=2 value=2\n', 'text/plain; charset=utf-8')).toBe(2);
  expect(storedPoints('{"records":[1,2]}', 'application/json')).toBe(0);
  expect(storedPoints('not json')).toBe(0);
});

describe('extra fields (CONTRACT 4.7): reserved names compared after escaping; format.fields chooses them', () => {
  it('an extra field named time\\ or value\\ (its trailing \\ dropped) is left out like time and value; one that escapes to nothing too', () => {
    const p = { casdu: 1, ioa: 2, value: 5, 'time\\': 1, 'value\\\\': 2, 'type\\': 3, '\\': 4, 'value_text\\': 'x', 'q\\': 6, 'a b': 7 };
    expect(pointLine(p, O, 9)).toBe('datapoints,casdu=1,ioa=2 value=5,q=6,a\\ b=7 9\n');
  });

  it('format.fields writes only the fields it names, in its order, of the kinds written; [] writes none', () => {
    const p = { casdu: 1, ioa: 2, value: 5, quality: 'good', n: 3, flag: true, obj: { a: 1 }, 'a b': 1 };
    expect(pointLine(p, { ...O, fields: ['n', 'missing', 'obj', 'quality', 'a b'] }, 9)).toBe('datapoints,casdu=1,ioa=2 value=5,n=3,quality="good",a\\ b=1 9\n');
    expect(pointLine(p, { ...O, fields: [] }, 9)).toBe('datapoints,casdu=1,ioa=2 value=5 9\n');
    // inherited names are no fields of the point
    expect(pointLine(p, { ...O, fields: ['toString', 'constructor'] }, 9)).toBe('datapoints,casdu=1,ioa=2 value=5 9\n');
  });

  it('a format.fields name that can never be an extra field, one given twice, or not a list of strings: config error naming the field', () => {
    const problems = (fields: unknown): string => {
      const r = parseManagedSettings(JSON.stringify({ hostUrls: ['http://127.0.0.1:1'], webhooks: [{ url: 'http://x/', format: { type: 'influx-line', fields } }] }));
      return E.isLeft(r) ? r.left.join('\n') : '';
    };
    expect(problems(['quality', 'time\\'])).toContain('webhooks[0].format.fields: [1] "time\\\\" can never be an extra field');
    expect(problems(['value'])).toContain('webhooks[0].format.fields: [0] "value" can never be an extra field');
    expect(problems(['\\\\'])).toContain('webhooks[0].format.fields: [0] "\\\\\\\\" can never be an extra field');
    expect(problems(['a', 'a'])).toContain('webhooks[0].format.fields: [1] "a" is given twice');
    expect(problems('quality')).toContain('webhooks[0].format.fields: must be a list of field names');
    expect(problems([5])).toContain('webhooks[0].format.fields: [0] must be a field name');
    expect([problems([]), problems(['quality', 'time2'])]).toEqual(['', '']);
  });
});

describe('Webhooks:MaxBodyBytes (CONTRACT 4.7 "Size"): any format\'s body longer than it cannot be rendered', () => {
  const batch = toBatch(Array.from({ length: 10 }, (_, i) => ({ id: `5-${i}`, json: `{"casdu":1,"ioa":${i},"value":${i}}` })));
  const hook = (format: Record<string, unknown> | undefined, max: number) => formatOf({ url: 'http://x/?precision=ms', headers: {}, secrets: [], ...(format ? { format } : {}) } as never, max);
  it.each([
    ['datapoints', undefined],
    ['ndjson', { type: 'ndjson' }],
    ['influx-line', { type: 'influx-line' }],
    ['jsonata', { type: 'jsonata', expression: 'datapoints' }],
  ])('%s: refused past the limit with its size; rendered at it', async (_name, format) => {
    const whole = await prepareBody(hook(format, 1 << 20), batch);
    if (whole.kind !== 'body') throw new Error(`not rendered: ${JSON.stringify(whole)}`);
    const n = whole.body.bytes.length;
    expect(await prepareBody(hook(format, n - 1), batch)).toEqual({ kind: 'failed', error: `body of ${n} bytes exceeds Webhooks:MaxBodyBytes` });
    expect((await prepareBody(hook(format, n), batch)).kind).toBe('body');
  }, 20000);
});

describe('jsonata', () => {
  const f = (expression: string, output?: 'json' | 'ndjson') => compileJsonata(expression, output);
  const input = { datapoints: [{ casdu: 1, ioa: 2, value: 3 }, { casdu: 1, ioa: 3, value: 4 }] };

  it('json output, ndjson output, and nothing', async () => {
    await expect(jsonataText(f('{"n": $count(datapoints)}'), input)).resolves.toBe('{"n":2}');
    await expect(jsonataText(f('datapoints.{"v": value}', 'ndjson'), input)).resolves.toBe('{"v":3}\n{"v":4}\n');
    await expect(jsonataText(f('datapoints[value > 10]'), input)).resolves.toBeUndefined();
  });

  it('fails: an error in the expression, ndjson of a non-array', async () => {
    await expect(jsonataText(f('$error("boom")'), input)).rejects.toThrow('boom');
    await expect(jsonataText(f('{"a": 1}', 'ndjson'), input)).rejects.toThrow('output "ndjson" needs an array');
  });
});

describe('format settings', () => {
  const problems = (webhook: object): string[] => {
    const r = parseManagedSettings(JSON.stringify({ hostUrls: ['http://127.0.0.1:1'], webhooks: [webhook] }));
    return E.isLeft(r) ? r.left : [];
  };
  it.each([
    [{ url: 'http://x/', format: { type: 'csv' } }, 'webhooks[0].format.type: must be one of'],
    [{ url: 'http://x/', format: 'ndjson' }, 'webhooks[0].format: must be an object with a "type"'],
    [{ url: 'http://x/', format: { type: 'jsonata', expression: 'a.(' } }, 'webhooks[0].format.expression: does not compile'],
    [{ url: 'http://x/', format: { type: 'jsonata', expression: 'a', output: 'csv' } }, 'webhooks[0].format.output: must be one of "json", "ndjson"'],
    [{ url: 'http://x/', format: { type: 'influx-line', measurement: 'm\\' } }, 'webhooks[0].format.measurement: must not end in "\\"'],
    [{ url: 'http://x/', format: { type: 'influx-line', measurement: '#m' } }, 'webhooks[0].format.measurement: must not start with "#"'],
    [{ url: 'http://x/', format: { type: 'influx-line', measurement: 'a\nb' } }, 'webhooks[0].format.measurement: must not hold a line break'],
    [{ url: 'http://x/', format: { type: 'jsonata', expression: 'a', contentType: 'json' } }, 'webhooks[0].format.contentType: must be a media type'],
    [{ url: 'http://x/', format: { type: 'influx-line', precision: 'h' } }, 'webhooks[0].format.precision: must be one of'],
    [{ url: 'http://x/?precision=us', format: { type: 'influx-line', precision: 'ms' } }, 'webhooks[0].format.precision: "ms" is not the unit of the URL\'s precision'],
    [{ url: 'http://x/?precision=', format: { type: 'influx-line' } }, 'webhooks[0].url: its "precision" must be given once'],
    [{ url: 'http://x/?precision=s&precision=s', format: { type: 'influx-line' } }, 'webhooks[0].url: its "precision" must be given once'],
    [{ url: 'http://x/', compression: 'br' }, 'webhooks[0].compression: must be one of "none", "gzip"'],
  ])('%j: %s', (webhook, expected) => expect(problems(webhook).join('\n')).toContain(expected));

  it('accepts the same unit written two ways (u and us), and no precision at all', () => {
    expect(problems({ url: 'http://x/?precision=u', format: { type: 'influx-line', precision: 'us' } })).toEqual([]);
    expect(problems({ url: 'http://x/', format: { type: 'influx-line' }, compression: 'gzip' })).toEqual([]);
  });
});

describe('the edges the mutation run found (issue 38)', () => {
  it('tag values of every kind: numbers and booleans as written, strings and anything else as JSON text, escaped', () => {
    expect(pointLine({ casdu: 1, ioa: 2, source: true, type: { a: 'x y' }, value: 1 }, O, undefined)).toBe('datapoints,casdu=1,ioa=2,source=true,type={"a":"x\\ y"} value=1\n');
    expect(pointLine({ value: 1, flag: true, '\\\\': 5 }, O, undefined)).toBe('datapoints value=1,flag=true\n');
  });

  it('a timestamp that is not a string is no timestamp (the entry\'s time is used), however Date.parse would read it', () => {
    expect(pointLine({ casdu: 1, ioa: 2, value: 1, timestamp: 2026 }, O, 7)).toBe('datapoints,casdu=1,ioa=2 value=1 7\n');
  });

  it('times in every precision, zero too', () => {
    expect([timeIn(0, 'ns'), timeIn(0, 'us'), timeIn(0, 'ms'), timeIn(0, 's')]).toEqual(['0', '0', '0', '0']);
    expect([timeIn(1999, 'ns'), timeIn(1999, 'us'), timeIn(1999, 'ms'), timeIn(1999, 's'), timeIn(-1999, 's')]).toEqual(['1999000000', '1999000', '1999', '1', '-1']);
  });

  it('a format\'s kind and content type (CONTRACT 4.7): JSONata\'s by its output unless set', () => {
    expect([bodyFormatOf({ type: 'datapoints' }, 'ns', 5), bodyFormatOf({ type: 'ndjson' }, 'ns')]).toEqual([{ type: 'datapoints', maxBodyBytes: 5 }, { type: 'ndjson', maxBodyBytes: 16 * 1024 * 1024 }]);
    expect([NDJSON_CONTENT_TYPE, LINE_CONTENT_TYPE]).toEqual(['application/x-ndjson', 'text/plain; charset=utf-8']);
    const ct = (f: Record<string, unknown>) => (bodyFormatOf({ type: 'jsonata', expression: 'x', ...f } as never, 'ns') as { contentType: string }).contentType;
    expect([ct({}), ct({ output: 'json' }), ct({ output: 'ndjson' }), ct({ contentType: 'application/vnd.x+json' }), ct({ output: 'ndjson', contentType: 'text/csv' })])
      .toEqual(['application/json', 'application/json', 'application/x-ndjson', 'application/vnd.x+json', 'text/csv']);
  });

  it('splits at the right commas when strings hold brackets, commas and escaped quotes', () => {
    expect(ndjsonBytes('{"a":"},"},{"b":"\\"},{"},{"c":["]",","]}').toString()).toBe('{"a":"},"}\n{"b":"\\"},{"}\n{"c":["]",","]}\n');
  });

  it('an entry ID without a time before its dash has no time', () => {
    expect([entryMs('12345'), entryMs('-5'), entryMs('x-1'), entryMs('1700000000000-3'), entryMs('')]).toEqual([undefined, undefined, undefined, 1700000000000, undefined]);
  });

  it('JSONata\'s errors with their code and place; ndjson output of anything but an array named', async () => {
    const f = (expression: string, output: 'json' | 'ndjson' = 'json') => compileJsonata(expression, output);
    await expect(jsonataText(f('$foo()'), {})).rejects.toThrow(/^Attempted to invoke a non-function \(T1006 at character 5\)$/);
    await expect(jsonataText(f('$error("boom")'), {})).rejects.toThrow(/^boom \(D3137 at character 7\)$/);
    // errors from elsewhere (here the input's getters): with a code and no place, or neither
    const throwing = (err: Error) => Object.defineProperty({}, 'x', { get: () => { throw err; }, enumerable: true });
    await expect(jsonataText(f('x'), throwing(Object.assign(new Error('coded'), { code: 'X1' })))).rejects.toThrow(/^coded \(X1\)$/);
    await expect(jsonataText(f('x'), throwing(new Error('plain')))).rejects.toThrow(/^plain$/);
    for (const [x, kind] of [[null, 'null'], [5, 'number'], ['s', 'string'], [{ a: 1 }, 'object']] as const) {
      await expect(jsonataText(f('x', 'ndjson'), { x })).rejects.toThrow(`output "ndjson" needs an array, the expression gave ${kind}`);
    }
    expect([await jsonataText(f('x', 'ndjson'), {}), await jsonataText(f('x', 'ndjson'), { x: [1, { a: 2 }] })]).toEqual([undefined, '1\n{"a":2}\n']);
  });
});
