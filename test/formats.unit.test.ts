import fc from 'fast-check';
import * as E from 'fp-ts/Either';
import { parseManagedSettings } from '../src/config/managed';
import { escapeKey, escapeMeasurement, escapeStringField, pointLine, timeIn } from '../src/streams/webhook/lineProtocol';
import { bodyFormatOf, entryMs, jsonataText, LINE_CONTENT_TYPE, NDJSON_CONTENT_TYPE, ndjsonBytes } from '../src/streams/webhook/formats';
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

describe('jsonata', () => {
  const f = (expression: string, output?: 'json' | 'ndjson') => {
    const made = bodyFormatOf({ type: 'jsonata', expression, ...(output !== undefined ? { output } : {}) }, 'ns');
    if (made.type !== 'jsonata') throw new Error('not jsonata');
    return made;
  };
  const input = { datapoints: [{ casdu: 1, ioa: 2, value: 3 }, { casdu: 1, ioa: 3, value: 4 }] };

  it('json output, ndjson output, and nothing', async () => {
    await expect(jsonataText(f('{"n": $count(datapoints)}'), input)).resolves.toBe('{"n":2}');
    await expect(jsonataText(f('datapoints.{"v": value}', 'ndjson'), input)).resolves.toBe('{"v":3}\n{"v":4}\n');
    await expect(jsonataText(f('datapoints[value > 10]'), input)).resolves.toBeUndefined();
  });

  it('lets other work run while it evaluates a large batch: immediates queued meanwhile run before it ends', async () => {
    const big = { datapoints: Array.from({ length: 5000 }, (_, i) => ({ casdu: 1, ioa: i, value: i })) };
    let immediates = 0;
    let evaluating = true;
    const tick = (): void => {
      immediates++;
      if (evaluating) setImmediate(tick);
    };
    setImmediate(tick);
    const text = await jsonataText(f('{ "records": [datapoints.{ "tag": casdu & "." & ioa, "v": value }] }'), big);
    evaluating = false;
    expect((JSON.parse(text!) as { records: unknown[] }).records).toHaveLength(5000);
    expect(immediates).toBeGreaterThan(5);
  });

  it('fails: an error in the expression, ndjson of a non-array, an evaluation longer than 1 s', async () => {
    await expect(jsonataText(f('$error("boom")'), input)).rejects.toThrow('boom');
    await expect(jsonataText(f('{"a": 1}', 'ndjson'), input)).rejects.toThrow('output "ndjson" needs an array');
    await expect(jsonataText(f('($f := function($n) { $n > 0 ? $f($n - 1) + $f($n - 1) : 0 }; $f(40))'), input)).rejects.toThrow(/longer than 1000 ms|stack/);
  }, 15000);
});

describe('an expression evaluates one batch at a time (oneAtATime)', () => {
  const hookOf = (expression: string) => {
    const f = formatOf({ url: 'http://x/', headers: {}, secrets: [], format: { type: 'jsonata', expression } } as never);
    if (f.type !== 'jsonata') throw new Error('not jsonata');
    return f;
  };
  const batchOf = (n: number, k: number) => toBatch(Array.from({ length: n }, (_, i) => ({ id: `${k}-${i}`, json: `{"casdu":1,"ioa":${i},"value":${i}}` })));
  const RECORDS = '{ "records": [datapoints.{ "tag": casdu & "." & ioa, "v": value }] }';

  it('batches that arrive together are evaluated one after another, in the order they came', async () => {
    const f = hookOf(`($mark("start", $count(datapoints)); $r := ${RECORDS}; $mark("end", $count(datapoints)); $r)`);
    const marks: string[] = [];
    f.expression.assign('mark', (what: string, n: number) => marks.push(`${what} ${n}`));
    const sizes = [300, 5, 200, 1, 50];
    const done = await Promise.all(sizes.map((n, k) => prepareBody(f, batchOf(n, k))));
    expect(done.map((p) => p.kind)).toEqual(sizes.map(() => 'body'));
    // side by side they would start together: start 300, start 5, start 200, …
    expect(marks).toEqual(sizes.flatMap((n) => [`start ${n}`, `end ${n}`]));
  });

  it('each is held to 1 s of its own: renders worth more than 1 s together all succeed', async () => {
    const f = hookOf(RECORDS);
    await prepareBody(f, batchOf(1000, 0));
    const t0 = Date.now();
    await prepareBody(f, batchOf(1000, 1));
    // about 2.5 s of renders, however fast this machine is (side by side, most ran past 1 s and were refused)
    const n = Math.min(300, Math.ceil(2500 / Math.max(1, Date.now() - t0)));
    const all = await Promise.all(Array.from({ length: n }, (_, k) => prepareBody(f, batchOf(1000, k + 2))));
    expect(all.filter((p) => p.kind !== 'body')).toEqual([]);
  }, 30000);

  it('another expression is not held behind this one\'s batches: it takes turns with them', async () => {
    const slow = hookOf(RECORDS);
    const other = hookOf('{ "n": $count(datapoints) }');
    const ended: string[] = [];
    const slows = Array.from({ length: 10 }, (_, k) => prepareBody(slow, batchOf(2000, 100 + k)).then(() => ended.push(`slow ${k}`)));
    const quick = prepareBody(other, batchOf(1, 200)).then(() => ended.push('other'));
    await Promise.all([...slows, quick]);
    expect(ended.indexOf('other')).toBeLessThan(ended.indexOf('slow 1'));
  }, 30000);
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
    expect([bodyFormatOf({ type: 'datapoints' }, 'ns'), bodyFormatOf({ type: 'ndjson' }, 'ns')]).toEqual([{ type: 'datapoints' }, { type: 'ndjson' }]);
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
    const f = (expression: string, output = 'json') => bodyFormatOf({ type: 'jsonata', expression, output } as never, 'ns') as Extract<ReturnType<typeof bodyFormatOf>, { type: 'jsonata' }>;
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
