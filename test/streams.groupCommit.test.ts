import { lastValueFrom, type Subscription } from 'rxjs';
import { groupCommit } from '../src/streams/store/groupCommit';

/** A write port the test answers by hand: each call waits until the test settles it. */
const port = () => {
  const calls: Array<{ items: readonly string[]; settle: (err?: Error) => void }> = [];
  const write = (items: readonly string[]) =>
    new Promise<void>((resolve, reject) => calls.push({ items, settle: (err) => (err === undefined ? resolve() : reject(err)) }));
  return { calls, write };
};
const tick = () => new Promise((r) => setImmediate(r));

describe('groupCommit (the marks of a batch in as few writes as landing each at once allows)', () => {
  it('sends the first item at once; items asked for meanwhile go together in the next write, once the first landed; each completes when its own write landed', async () => {
    const { calls, write } = port();
    const commit = groupCommit(10, write);
    const done: string[] = [];
    const ask = (x: string) => lastValueFrom(commit(x), { defaultValue: undefined }).then(() => done.push(x));
    const a = ask('a');
    await tick();
    expect(calls.map((c) => c.items)).toEqual([['a']]);
    const rest = [ask('b'), ask('c'), ask('d')];
    await tick();
    expect(calls).toHaveLength(1); // b, c, d wait for a's write
    expect(done).toEqual([]);
    calls[0]!.settle();
    await a;
    await tick();
    expect(done).toEqual(['a']);
    expect(calls.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd']]);
    calls[1]!.settle();
    await Promise.all(rest);
    expect(done).toEqual(['a', 'b', 'c', 'd']);
    // idle again: the next goes at once
    void ask('e');
    await tick();
    expect(calls.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    calls[2]!.settle();
  });

  it('a failed write is told, and tried again after retryMs with what was asked for meanwhile; nothing completes before it lands', async () => {
    const { calls, write } = port();
    const errors: unknown[] = [];
    const commit = groupCommit(20, write, (e) => errors.push(e));
    let landed = 0;
    const a = lastValueFrom(commit('a'), { defaultValue: undefined }).then(() => landed++);
    await tick();
    calls[0]!.settle(new Error('away'));
    await tick();
    const b = lastValueFrom(commit('b'), { defaultValue: undefined }).then(() => landed++);
    await tick();
    expect(errors.map((e) => (e as Error).message)).toEqual(['away']);
    expect(calls).toHaveLength(1); // waiting retryMs, b with it
    await new Promise((r) => setTimeout(r, 40));
    expect(calls.map((c) => c.items)).toEqual([['a'], ['a', 'b']]);
    expect(landed).toBe(0);
    calls[1]!.settle();
    await Promise.all([a, b]);
    expect(landed).toBe(2);
  });

  it('an item unsubscribed before it went is left out; a write all of whose callers left is not tried again', async () => {
    const { calls, write } = port();
    const commit = groupCommit(10, write);
    const first = commit('a').subscribe();
    await tick();
    const gone: Subscription = commit('b').subscribe();
    const kept = lastValueFrom(commit('c'), { defaultValue: undefined });
    gone.unsubscribe();
    calls[0]!.settle();
    await tick();
    expect(calls.map((c) => c.items)).toEqual([['a'], ['c']]);
    first.unsubscribe();
    // d's caller leaves while its write is on its way; the write fails: no retry follows
    const c = commit('d').subscribe();
    calls[1]!.settle();
    await kept;
    await tick();
    expect(calls.map((x) => x.items)).toEqual([['a'], ['c'], ['d']]);
    c.unsubscribe();
    calls[2]!.settle(new Error('away'));
    await new Promise((r) => setTimeout(r, 40));
    expect(calls).toHaveLength(3);
  });

  it('a write that throws at once counts as failed and is tried again: the queue never stays busy', async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const commit = groupCommit(10, () => {
      calls++;
      if (calls === 1) throw new Error('thrown');
      return Promise.resolve();
    }, (e) => errors.push(e));
    await lastValueFrom(commit('a'), { defaultValue: undefined });
    expect(calls).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['thrown']);
    await lastValueFrom(commit('b'), { defaultValue: undefined });
    expect(calls).toBe(3);
  });
});
