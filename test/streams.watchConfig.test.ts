import { Observable, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { DEFAULT_SETTINGS, parseManagedSettings } from '../src/config/managed';
import { watchConfig$, type ConfigEvent } from '../src/streams/watchConfig';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const settingsOf = (text: string) => {
  const r = parseManagedSettings(text);
  if (r._tag === 'Left') throw new Error(r.left.join());
  return r.right;
};
const kind = (e: ConfigEvent) => (e.kind === 'invalid' ? `invalid:${e.errors[0]}` : e.kind);

/** A key whose text changes at given virtual times; each poll reads the current text. */
const keyOver = (ts: TestScheduler, timeline: Array<[number, string | null]>) => (): Observable<string | null> =>
  new Observable((sub) => {
    const now = ts.now();
    const current = timeline.filter(([t]) => t <= now).pop();
    sub.next(current ? current[1] : null);
    sub.complete();
  });

describe('config watch', () => {
  const A = '{"displayName":"a","isActive":true}';
  const A_REORDERED = '{"isActive":true,"displayName":"a","unknown":1}';
  const B = '{"displayName":"b"}';

  it('emits nothing for a rewrite of the same settings, then the change', () => {
    const ts = newScheduler();
    ts.run(({ expectObservable }) => {
      const read = keyOver(ts, [[0, A], [25, A_REORDERED], [45, B]]);
      const out = watchConfig$({ read, initialRaw: A, current: settingsOf(A), connector: 'outbound', intervalMs: 10, scheduler: ts });
      expectObservable(out.pipe(map(kind)), '^ 60ms !').toBe('50ms x', { x: 'changed' });
    });
  });

  it('reports an invalid change and a deletion, and keeps watching', () => {
    const ts = newScheduler();
    ts.run(({ expectObservable }) => {
      const read = keyOver(ts, [[0, A], [15, '{"isActive":"no"}'], [35, null], [55, B]]);
      const out = watchConfig$({ read, initialRaw: A, current: settingsOf(A), connector: 'inbound', intervalMs: 10, scheduler: ts });
      expectObservable(out.pipe(map(kind)), '^ 70ms !').toBe('20ms x 19ms y 19ms z', {
        x: 'invalid:isActive: must be a boolean, got "no"', y: 'deleted', z: 'changed',
      });
    });
  });

  it('counts the key appearing after a start on defaults as a change, even with default content', () => {
    const ts = newScheduler();
    ts.run(({ expectObservable }) => {
      const read = keyOver(ts, [[25, '{}']]);
      const out = watchConfig$({ read, initialRaw: null, current: DEFAULT_SETTINGS, connector: 'outbound', intervalMs: 10, scheduler: ts });
      expectObservable(out.pipe(map(kind)), '^ 40ms !').toBe('30ms x', { x: 'changed' });
    });
  });

  it('skips a poll that fails (data store away) without ending the watch', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      let n = 0;
      const read = () => (++n === 1 ? cold<string | null>('#') : cold<string | null>('(b|)', { b: B }));
      const out = watchConfig$({ read, initialRaw: A, current: settingsOf(A), connector: 'outbound', intervalMs: 10, scheduler: ts });
      expectObservable(out.pipe(map(kind)), '^ 30ms !').toBe('20ms x', { x: 'changed' });
    });
  });
});
