import { inFlightEntries } from '../src/streams/read/inFlight';

/** src/streams/read/inFlight.ts: what a look at a pending list skips. */
it('a look skips what is in flight, and what was acknowledged since it began — only while it lasts', () => {
  const f = inFlightEntries();
  f.add(['1-0', '1-1', '1-2']);
  f.acknowledged(['1-0']); // before the look: the read that follows no longer holds it
  const look = f.look();
  expect(['1-0', '1-1', '1-2', '1-3'].map(look.has)).toEqual([false, true, true, false]);
  f.acknowledged(['1-1']);
  const later = f.look();
  expect([look.has('1-1'), later.has('1-1'), f.size()]).toEqual([true, false, 1]);
  look.end();
  f.acknowledged(['1-2']);
  // an ended look no longer hears of acknowledgements; one still open does
  expect([look.has('1-2'), later.has('1-2'), f.size()]).toEqual([false, true, 0]);
  later.end();
  f.add(['2-0']);
  expect(f.look().has('2-0')).toBe(true);
});
