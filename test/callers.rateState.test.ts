import { ALLOWED, arrive, counted, failed, REFUSED, type RateState, type RateStep } from '../src/http/app/rateState';

/** CONTRACT 7.2: the rate windows' pure state (src/http/app/rateState.ts), a row per invariant. */

const EMPTY: RateState = new Map();
const S = 1_700_000_000;
/** Runs arrivals of one caller in second `second`: the steps, the state after them. */
const arrivals = (state: RateState, n: number, second = S, connected = true, caller = 'gw') => {
  const steps: RateStep[] = [];
  let s = state;
  for (let i = 0; i < n; i++) {
    const step = arrive(s, caller, second, connected);
    steps.push(step);
    s = step.state;
  }
  return { steps, state: s };
};

describe('rate state (src/http/app/rateState.ts)', () => {
  it('1: a window is one caller\'s whole second; another second or caller is another window', () => {
    const a = arrivals(EMPTY, 1);
    expect(a.steps[0]!.count).toEqual({ second: S, by: 1 });
    const b = arrive(a.state, 'gw', S + 1, true);
    expect(b.count).toEqual({ second: S + 1, by: 1 });
    const c = arrive(b.state, 'historian', S + 1, true);
    expect(c.count).toEqual({ second: S + 1, by: 1 });
    expect([...c.state.keys()]).toEqual(['gw', 'historian']);
  });

  it('2: at most one count per caller and window in flight; the requests that came meanwhile are counted together by the next', () => {
    const a = arrivals(EMPTY, 4);
    expect(a.steps.map((s) => s.count)).toEqual([{ second: S, by: 1 }, undefined, undefined, undefined]);
    expect(a.steps.map((s) => s.verdict)).toEqual([undefined, undefined, undefined, undefined]);
    const back = counted(a.state, 'gw', S, 1, 1, 100);
    expect(back.verdicts).toEqual([ALLOWED]);
    expect(back.count).toEqual({ second: S, by: 3 });
    const last = counted(back.state, 'gw', S, 3, 4, 100);
    expect(last.verdicts).toEqual([ALLOWED, ALLOWED, ALLOWED]);
    expect(last.count).toBeUndefined();
    expect(last.state.get('gw')).toEqual([{ second: S, waiting: 0, counting: 0, usedUp: false }]);
  });

  it.each([
    // [limit, by, total (Redis's, the other replicas' requests included), verdicts]
    [3, 3, 3, [ALLOWED, ALLOWED, ALLOWED]],
    [3, 3, 4, [ALLOWED, ALLOWED, REFUSED]],
    [3, 2, 7, [REFUSED, REFUSED]],
    [3, 1, 3, [ALLOWED]],
    [3, 1, 4, [REFUSED]],
    [1, 4, 4, [ALLOWED, REFUSED, REFUSED, REFUSED]],
    [5, 4, 6, [ALLOWED, ALLOWED, ALLOWED, REFUSED]],
  ])('3: limit %i, a count of %i coming back with total %i', (limit, by, total, verdicts) => {
    // `by` requests waiting behind a first count of one: the second count holds them
    const first = arrivals(EMPTY, 1 + by);
    const second = counted(first.state, 'gw', S, 1, total - by, 1000);
    expect(second.count).toEqual({ second: S, by });
    expect(counted(second.state, 'gw', S, by, total, limit).verdicts).toEqual(verdicts);
  });

  it('4: a window known to be used up refuses here, without a count; the next second counts again', () => {
    const a = arrivals(EMPTY, 1);
    const full = counted(a.state, 'gw', S, 1, 3, 3);
    expect(full.verdicts).toEqual([ALLOWED]);
    const next = arrivals(full.state, 3);
    expect(next.steps.map((s) => [s.verdict, s.count])).toEqual([[REFUSED, undefined], [REFUSED, undefined], [REFUSED, undefined]]);
    // a total below the limit leaves the window open
    const open = counted(a.state, 'gw', S, 1, 2, 3);
    expect(arrive(open.state, 'gw', S, true).verdict).toBeUndefined();
    expect(arrive(next.state, 'gw', S + 1, true).count).toEqual({ second: S + 1, by: 1 });
  });

  it('5: an older window\'s count answers its own requests and counts its own waiting ones; the new window counts apart; idle old windows are forgotten', () => {
    const old = arrivals(EMPTY, 3);
    // a new second begins while the old window's count (1) is in flight and 2 wait
    const fresh = arrive(old.state, 'gw', S + 1, true);
    expect(fresh.count).toEqual({ second: S + 1, by: 1 });
    const back = counted(fresh.state, 'gw', S, 1, 1, 10);
    expect(back.verdicts).toEqual([ALLOWED]);
    expect(back.count).toEqual({ second: S, by: 2 });
    const done = counted(back.state, 'gw', S, 2, 3, 10);
    expect(done.count).toBeUndefined();
    // the old window is forgotten once it has nothing to answer; the new one stays
    expect(done.state.get('gw')!.map((w) => w.second)).toEqual([S + 1]);
    // the old window used up does not refuse the new one's requests
    const used = counted(back.state, 'gw', S, 2, 30, 10);
    expect(used.verdicts).toEqual([REFUSED, REFUSED]);
    expect(arrive(counted(used.state, 'gw', S + 1, 1, 1, 10).state, 'gw', S + 1, true).count).toEqual({ second: S + 1, by: 1 });
    // a count of a window forgotten altogether answers its requests and changes nothing else
    const late = counted(new Map([['gw', [{ second: S + 5, waiting: 0, counting: 0, usedUp: false }]]]), 'gw', S, 2, 2, 10);
    expect(late.verdicts).toEqual([ALLOWED, ALLOWED]);
    expect(late.state.get('gw')!.map((w) => w.second)).toEqual([S + 5]);
    expect(late.count).toBeUndefined();
  });

  it('6: Redis not reachable: the requests go on; Redis refusing the count: they fail, and the next waiting ones are counted', () => {
    const off = arrivals(EMPTY, 2, S, false);
    expect(off.steps.map((s) => [s.verdict, s.count])).toEqual([[ALLOWED, undefined], [ALLOWED, undefined]]);
    const a = arrivals(EMPTY, 3);
    const lost = failed(a.state, 'gw', S, 1);
    expect(lost.verdicts).toEqual([ALLOWED]);
    expect(lost.count).toEqual({ second: S, by: 2 });
    const refused = failed(lost.state, 'gw', S, 2, "NOPERM this user has no permissions to run the 'incrby' command");
    expect(refused.verdicts).toEqual([
      { allowed: false, failed: "NOPERM this user has no permissions to run the 'incrby' command" },
      { allowed: false, failed: "NOPERM this user has no permissions to run the 'incrby' command" },
    ]);
    expect(refused.count).toBeUndefined();
    expect(refused.state.get('gw')).toEqual([{ second: S, waiting: 0, counting: 0, usedUp: false }]);
    // a failure never marks the window used up
    expect(arrive(refused.state, 'gw', S, true).count).toEqual({ second: S, by: 1 });
  });

  it('the state is never changed in place', () => {
    const a = arrivals(EMPTY, 2);
    const snapshot = JSON.stringify([...a.state]);
    counted(a.state, 'gw', S, 1, 1, 1);
    failed(a.state, 'gw', S, 1, 'x');
    arrive(a.state, 'gw', S + 1, true);
    expect(JSON.stringify([...a.state])).toBe(snapshot);
    expect(EMPTY.size).toBe(0);
  });
});
