import fc from 'fast-check';
import { imageAddress } from '../src/streams/image/address';

/** The key grammar, as a regular expression: the oracle of the allocation-free reader. */
const KEY = /^process:image:casdu:(0|[1-9][0-9]{0,4}):ioa:(0|[1-9][0-9]{0,7})$/;
const oracle = (key: string): number => {
  const m = KEY.exec(key);
  if (m === null) return -1;
  const casdu = Number(m[1]);
  const ioa = Number(m[2]);
  return casdu <= 65535 && ioa <= 16777215 ? casdu * 16777216 + ioa : -1;
};

it('reads a process image key to its address exactly as the key grammar does, and refuses every other shape', () => {
  const cases = [
    'process:image:casdu:0:ioa:0', 'process:image:casdu:65535:ioa:16777215', 'process:image:casdu:65536:ioa:1', 'process:image:casdu:1:ioa:16777216',
    'process:image:casdu:01:ioa:1', 'process:image:casdu:1:ioa:01', 'process:image:casdu:1:ioa:1:x', 'process:image:casdu::ioa:1', 'process:image:casdu:1:ioa:',
    'process:image:casdu:1:iob:1', 'xprocess:image:casdu:1:ioa:1', 'process:image:casdu:1:ioa:1 ', 'process:image:casdu:-1:ioa:1', 'process:image:casdu:1:ioa:99999999999999999999',
    'process:image:casdu:1:ioa:1e3', 'process:image:casdu:٣:ioa:1',
  ];
  for (const k of cases) expect([k, imageAddress(k)]).toEqual([k, oracle(k)]);
  expect(imageAddress('process:image:casdu:2:ioa:5')).toBe(2 * 16777216 + 5);
  fc.assert(
    fc.property(
      fc.oneof(fc.nat(70000).map(String), fc.string({ maxLength: 6 })),
      fc.oneof(fc.nat(17000000).map(String), fc.string({ maxLength: 9 })),
      fc.constantFrom('', ':', 'x'),
      (c, i, tail) => {
        const k = `process:image:casdu:${c}:ioa:${i}${tail}`;
        return imageAddress(k) === oracle(k);
      },
    ),
    { numRuns: 2000, seed: 20261122 },
  );
});
