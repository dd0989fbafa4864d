import { overflowingNumbers, parseJsonBody, WrittenNumber } from '../src/mapping/writtenNumbers';

/** CONTRACT 5.4/6.5: numbers too large for a double keep their literal, found by their path in any JSON text. */
const found = (text: string) => overflowingNumbers(text).map((o) => [o.path, o.literal]);

it('a pretty-printed body (spaces, tabs, CR and LF between tokens) is walked to its end', () => {
  const text = '{\r\n\t"a" :\t[\r\n\t\t"x" ,\n\t\t1e400\r\n\t] ,\n  "b" : -1E999\n}\n';
  expect(found(text)).toEqual([[['a', 1], '1e400'], [['b'], '-1E999']]);
  expect(parseJsonBody(text)).toEqual({ a: ['x', new WrittenNumber('1e400')], b: new WrittenNumber('-1E999') });
});

it('array positions count every element before the number, whatever its type', () => {
  expect(found('{"a":["x",1e400]}')).toEqual([[['a', 1], '1e400']]);
  expect(found('[{"k":[]},[1,2],"s,]",null,true,9e999]')).toEqual([[[5], '9e999']]);
  expect(found('{"a":{"b":1},"c":[[1e999],2e999]}')).toEqual([[['c', 0, 0], '1e999'], [['c', 1], '2e999']]);
});

it('keys and strings that hold delimiters or escaped quotes do not move the path', () => {
  expect(found('{"a,b":{"c]\\"}":1e999}}')).toEqual([[['a,b', 'c]"}'], '1e999']]);
  expect(found('{"s":"1e999","t":"\\\\","n":1e999}')).toEqual([[['n'], '1e999']]);
});

it('numbers that fit are left alone, and a bare number at the top has no place to be kept in', () => {
  expect(found('{"a":1e308,"b":-0,"c":123456789012345678901234567890}')).toEqual([]);
  expect(found('1e999')).toEqual([]);
  expect(parseJsonBody('1e999')).toBe(Infinity);
  expect(parseJsonBody('{"a":1e300}')).toEqual({ a: 1e300 });
  expect(parseJsonBody(`{"a":1${'0'.repeat(309)}}`)).toEqual({ a: new WrittenNumber(`1${'0'.repeat(309)}`) });
});

it('a literal ends at the first delimiter: space, tab, CR, LF, comma or a closing bracket', () => {
  expect(found('{"a":1e999 ,"b":[2e999\t],"c":-3e999\r}')).toEqual([[['a'], '1e999'], [['b', 0], '2e999'], [['c'], '-3e999']]);
  expect(found('[true,false,null,1e999]')).toEqual([[[3], '1e999']]);
});

it('where a repeated key left another value (the last wins, as in JSON.parse), nothing is put in its place', () => {
  for (const last of ['5', 'null', '"abc"', '[]', '{}', 'true']) {
    const body = parseJsonBody(`{"d":{"x":[1e999]},"d":${last},"e":9e999,"e":5}`) as Record<string, unknown>;
    expect([body.d, body.e]).toEqual([JSON.parse(last), 5]);
  }
});

it('a kept literal is a plain own property, as JSON.parse makes them', () => {
  const body = parseJsonBody('{"a":[1e999],"__proto__":2e999}') as Record<string, unknown[]>;
  for (const [parent, key] of [[body.a, '0'], [body, '__proto__']] as const) {
    expect(Object.getOwnPropertyDescriptor(parent, key)).toEqual({ value: expect.any(WrittenNumber), writable: true, enumerable: true, configurable: true });
  }
  body.a![0] = 1;
  expect(body.a).toEqual([1]);
});
