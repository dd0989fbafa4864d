import { isUtf8 } from 'node:buffer';
import { scanPoint } from '../src/streams/image/jsonBytes';

/** What an interrogation decided with JSON.parse before it read bytes: the reference. */
const reference = (b: Buffer): { object: boolean; type: number | undefined; notUtf8: boolean } => {
  let v: unknown;
  try {
    v = JSON.parse(b.toString('utf8'));
  } catch {
    return { object: false, type: undefined, notUtf8: false };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { object: false, type: undefined, notUtf8: false };
  const type = (v as { type?: unknown }).type;
  return { object: true, type: typeof type === 'number' ? type : undefined, notUtf8: !isUtf8(b) };
};

const same = (b: Buffer) => {
  const ours = scanPoint(b, true);
  const want = reference(b);
  return { ours: { object: ours.object, type: ours.type, notUtf8: ours.notUtf8 }, want, bytes: b.toString('hex') };
};

const HAND_PICKED = [
  '{}', ' {} ', '\t\r\n{\n}\n', '{"a":1}', '{"a":1,}', '{,}', '{"a"}', '{"a":}', '{"a":1 "b":2}', '{"a":1,,"b":2}', '{"a" 1}', '{a:1}', "{'a':1}",
  '[]', '[{}]', 'null', '"x"', '1', 'true', '', ' ', '{', '}', '{"a":[1,2,]}', '{"a":[,1]}', '{"a":[1,,2]}', '{"a":[]}', '{"a":[ ]}', '{"a":{}}', '{"a":{ }}',
  '{"a":{"b":[{"c":null}]}}', '{"a":[[[[]]]]}', '{"a":[[[[]]]}', '{"a":[[[[]]]]]}', '{"a":[}', '{"a":{]}', '{"a":1,"b":[1,{"c":[true,false,null]}]}',
  '{"a":01}', '{"a":-}', '{"a":1.}', '{"a":.5}', '{"a":1e}', '{"a":1e+5}', '{"a":1E-5}', '{"a":-0.0E-0}', '{"a":+1}', '{"a":0x10}', '{"a":Infinity}',
  '{"a":NaN}', '{"a":-01}', '{"a":1.5.2}', '{"a":1e5e5}', '{"a":--1}', '{"a":0}', '{"a":-0}', '{"a":10}',
  '{"a":tru}', '{"a":truex}', '{"a":True}', '{"a":nul}', '{"a":false }', '{"a":falsey}',
  '{"a":"\\x"}', '{"a":"\\u12"}', '{"a":"\\u12g4"}', '{"a":"\\uD800"}', '{"a":"\\u00e9\\n\\t\\/\\b\\f\\r\\"\\\\"}', '{"a":"tab\there"}',
  '{"a":"\u007f"}', '{"a":"x', '{"a":"x\\"}', '{"a":1}}', '{"a":1}x', '{"a":1}{}', '{"a":1} ', '\uFEFF{}', '\u00a0{}', '\v{}', '\f{}', '{"a":1}\u00a0',
  '{"a\u0000":1}', '{"a":"\u0000"}', '{"\\u0000":1}', '{"":1}', '{"Schütz":"é ✓ 😀"}', '{"a":"\u2028\u2029"}',
  '{"type":36}', '{"type":"36"}', '{"type":36,"type":"x"}', '{"type":"x","type":7}', '{"typ\\u0065":5}', '{"\\u0074ype":-5}', '{"x":{"type":5}}',
  '{"type":[1]}', '{"type":{"a":1}}', '{"type":-1.5e2}', '{"type":1e400}', '{"type":-1e400}', '{"type" : 3 }', '{"type":null}', '{"type":true}',
  '{"types":1}', '{"typ":1}', '{"Type":1}', '{"type":3,"a":[{"type":4}]}', '{"a":[{"type":4}],"type":3}', '{"type":0.1e1}', '{"type":9007199254740993}',
  `{"a":${'['.repeat(100)}${']'.repeat(100)}}`, `{"a":${'['.repeat(10000)}${']'.repeat(10000)}}`, `{"a":${'{"b":'.repeat(500)}1${'}'.repeat(500)}}`,
  `{"a":${'['.repeat(70)}${']'.repeat(69)}}`,
];

const RAW: Buffer[] = [
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), // {"a":"<ff>"}: text with U+FFFD, valid there
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d]), // a cut sequence
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]), // an overlong '/'
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // an encoded surrogate
  Buffer.from([0x7b, 0xff, 0x7d]), // outside a string
  Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), // a byte order mark
  Buffer.from([0x7b, 0x22, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x31, 0x2c, 0x22, 0x62, 0x22, 0x3a, 0x22, 0xfe, 0x22, 0x7d]), // {"type":1,"b":"<fe>"}
];

it('hand-picked texts and bytes: one JSON object or not, its top-level type, and UTF-8 — as JSON.parse of the text decides', () => {
  const differ = [...HAND_PICKED.map((t) => Buffer.from(t, 'utf8')), ...RAW].map(same).filter((r) => JSON.stringify(r.ours) !== JSON.stringify(r.want));
  expect(differ).toEqual([]);
  // the cases are not all of one kind (a scanner that said no to everything would not pass)
  expect(HAND_PICKED.filter((t) => reference(Buffer.from(t)).object).length).toBeGreaterThan(40);
  expect(RAW.filter((b) => reference(b).notUtf8).length).toBe(5);
});

it('without a type asked for, the type is not read and the answer is otherwise the same', () => {
  for (const t of ['{"type":36}', '{"a":1}', '[1]']) {
    const b = Buffer.from(t);
    expect(scanPoint(b, false)).toEqual({ ...reference(b), type: undefined });
  }
});

/** A small seeded generator (mulberry32): the same cases on every run. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

it('15,000 generated objects, and each with random byte edits: the same answers as JSON.parse', () => {
  const rnd = prng(20261126);
  const pick = <A>(xs: readonly A[]): A => xs[Math.floor(rnd() * xs.length)]!;
  const ws = () => (rnd() < 0.2 ? pick([' ', '\n', '\t', '\r', '  ']) : '');
  const str = (): string => {
    let s = '"';
    const n = Math.floor(rnd() * 6);
    for (let i = 0; i < n; i++) s += pick(['a', 'Z', '5', ' ', 'é', '😀', '\\"', '\\\\', '\\n', '\\u0041', '\\uD83D\\uDE00', '\\/', 'type', ':', ',', '{', ']']);
    return `${s}"`;
  };
  const num = (): string => pick(['0', '-0', '36', '-17', '3.25', '1e3', '-2.5E-3', '1e400', '12345678901234567890', '0.5']);
  const value = (depth: number): string => {
    const r = rnd();
    if (depth > 4 || r < 0.5) return pick([str, num, () => pick(['true', 'false', 'null'])])();
    if (r < 0.75) return obj(depth + 1, false);
    return `[${ws()}${Array.from({ length: Math.floor(rnd() * 4) }, () => ws() + value(depth + 1) + ws()).join(',')}]`;
  };
  const obj = (depth: number, top: boolean): string => {
    const members = Array.from({ length: Math.floor(rnd() * 5) }, () => {
      const typeKey = top && rnd() < 0.4;
      const key = typeKey ? pick(['"type"', '"type"', '"typ\\u0065"', '"Type"']) : str();
      return `${ws()}${key}${ws()}:${ws()}${typeKey && rnd() < 0.6 ? num() : value(depth)}${ws()}`;
    });
    return `{${members.join(',')}${members.length === 0 ? ws() : ''}}`;
  };
  const EDIT_BYTES = [0x7b, 0x7d, 0x5b, 0x5d, 0x22, 0x5c, 0x2c, 0x3a, 0x20, 0x2d, 0x2e, 0x30, 0x31, 0x65, 0x75, 0x74, 0x6e, 0x00, 0x0a, 0x80, 0xc3, 0xff];
  const edit = (b: Buffer): Buffer => {
    const bytes = [...b];
    const edits = 1 + Math.floor(rnd() * 3);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(rnd() * (bytes.length + 1));
      const r = rnd();
      if (r < 0.33) bytes.splice(at, 1);
      else if (r < 0.66) bytes.splice(at, 0, pick(EDIT_BYTES));
      else bytes[Math.min(at, bytes.length - 1)] = pick(EDIT_BYTES);
    }
    return Buffer.from(bytes);
  };
  const differ: Array<ReturnType<typeof same>> = [];
  let objects = 0;
  let typed = 0;
  let edited = 0;
  for (let i = 0; i < 15_000; i++) {
    const b = Buffer.from(ws() + obj(0, true) + ws(), 'utf8');
    for (const c of [b, edit(b)]) {
      const r = same(c);
      if (JSON.stringify(r.ours) !== JSON.stringify(r.want)) differ.push(r);
      if (r.want.object) objects++;
      if (r.want.type !== undefined) typed++;
      if (c !== b && r.want.object) edited++;
    }
  }
  expect(differ.slice(0, 5)).toEqual([]);
  // the generated cases hold all kinds: valid objects, typed ones, edits that still parse and many that do not
  expect(objects).toBeGreaterThan(15_000);
  expect(typed).toBeGreaterThan(1_500);
  expect(edited).toBeGreaterThan(500);
  expect(objects).toBeLessThan(27_000);
});
