import { rateGate } from '../src/streams/webhook/rateGate';

/**
 * Starts of requests asking at the given times (ascending), each asking again when told to wait,
 * in the order they asked: as the lane does, one at a time per slot.
 */
const starts = (perSecond: number, asks: number[]): number[] => {
  const g = rateGate(perSecond);
  let last = 0;
  return asks.map((ask) => {
    let t = Math.max(ask, last);
    for (let wait = g.tryStart(t); wait > 0; wait = g.tryStart(t)) t += wait;
    last = t;
    return t;
  });
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

it('counts from when a request really started: one that went late pushes the next turn back', () => {
  const g = rateGate(1);
  expect(g.tryStart(0)).toBe(0);
  expect(g.tryStart(600)).toBe(400);
  expect(g.tryStart(1250)).toBe(0); // woke 250 ms late: it started at 1250
  expect(g.tryStart(2000)).toBe(250);
});
