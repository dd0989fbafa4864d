import { rateGate } from '../src/streams/rateGate';

/** Starts of `asks` requests asking at the given times; every 1 s window holds at most the cap. */
const starts = (perSecond: number, asks: number[]): number[] => {
  const g = rateGate(perSecond);
  return asks.map((t) => t + g.reserve(t));
};
const maxInAnySecond = (ts: number[]) => Math.max(...ts.map((t) => ts.filter((u) => u >= t && u < t + 1000).length));

it('5 per second: a burst of 12 starts 5 at once, then 5 a second later, then 2', () => {
  const s = starts(5, Array(12).fill(0));
  expect(s).toEqual([0, 0, 0, 0, 0, 1000, 1000, 1000, 1000, 1000, 2000, 2000]);
  expect(maxInAnySecond(s)).toBe(5);
});

it('requests asking slower than the cap never wait', () => {
  expect(starts(5, [0, 300, 600, 900, 1200, 1500])).toEqual([0, 300, 600, 900, 1200, 1500]);
});

it('a fractional cap: 0.5 per second spaces starts 2 s apart; 2.5 per second allows 2 in any second', () => {
  expect(starts(0.5, [0, 0, 0])).toEqual([0, 2000, 4000]);
  const s = starts(2.5, Array(7).fill(0));
  expect(maxInAnySecond(s)).toBe(2);
});

it('never more than the cap in any second, whatever the arrival pattern; a later request never starts before an earlier one', () => {
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (const cap of [1, 3, 5, 10, 1.5]) {
    const asks: number[] = [];
    let t = 0;
    for (let i = 0; i < 300; i++) asks.push((t += Math.floor(rnd() * 400)));
    const s = starts(cap, asks);
    expect(maxInAnySecond(s)).toBeLessThanOrEqual(Math.max(1, Math.floor(cap)));
    expect(s.every((x, i) => i === 0 || x >= s[i - 1]!)).toBe(true);
    expect(s.every((x, i) => x >= asks[i]!)).toBe(true);
  }
});
