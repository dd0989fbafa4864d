import { after, placeOf, streamId, StreamOrderedState } from '../support/streamOrder';

/** The receiver rule of docs/push.md ("Holding exactly the image"), as the chaos run and the process tests apply it. */
const x = (value: string) => ({ casdu: 1, ioa: 1, value });
const y = (value: string) => ({ casdu: 1, ioa: 2, value });

it('stream IDs compare as two numbers, not as text', () => {
  expect(after(streamId('1000-0'), streamId('999-5'))).toBe(true);
  expect(after(streamId('1000-10'), streamId('1000-9'))).toBe(true);
  expect(after(streamId('1000-9'), streamId('1000-9'))).toBe(false);
});

it('reads the position of a live batch (its last entry) and of an interrogation (its P), none of a resend', () => {
  expect(placeOf('1764140000120-0_1764140000180-2')).toEqual({ at: [1764140000180, 2], image: false });
  expect(placeOf('gi-1764140000000-3-12')).toEqual({ at: [1764140000000, 3], image: true });
  expect(placeOf('pi-0-0-1')).toEqual({ at: [0, 0], image: true });
  expect(placeOf('r-1764140000120-0_1764140000180-2')).toBeUndefined();
});

it('a batch that arrives after a newer one changes nothing (a retry, claimed entries)', () => {
  const s = new StreamOrderedState();
  s.apply('20-0_20-0', [x('new')]);
  expect([...s.apply('10-0_10-0', [x('old'), y('only-here')])!]).toEqual(['1:2']);
  expect([s.value('1:1'), s.value('1:2')]).toEqual(['new', 'only-here']);
});

it('an interrogation is taken when its P is not before what is held, and not when it is', () => {
  const s = new StreamOrderedState();
  s.apply('5-0_10-0', [x('batch')]);
  s.apply('gi-10-0-1', [x('image at 10')]);
  expect(s.value('1:1')).toBe('image at 10');
  s.apply('12-0_12-0', [x('at 12')]);
  s.apply('pi-11-0-1', [x('image at 11')]);
  expect(s.value('1:1')).toBe('at 12');
});

it('a batch that begins before an interrogation\'s P and ends after it is taken; within a batch the last point of an address wins', () => {
  const s = new StreamOrderedState();
  s.apply('gi-10-0-1', [x('image')]);
  s.apply('9-0_11-0', [x('first'), y('y'), x('last')]);
  expect([s.value('1:1'), s.value('1:2')]).toEqual(['last', 'y']);
});

it('a webhook-id without a position applies nothing', () => {
  const s = new StreamOrderedState();
  expect(s.apply('r-1-0_2-0', [x('resent')])).toBeUndefined();
  expect(s.value('1:1')).toBeUndefined();
});
