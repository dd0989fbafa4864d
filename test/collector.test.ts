import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { incrementalCollector } from '../src/runtime/collector';

describe('incrementalCollector (issue 13)', () => {
  it('is available on node and starts a full (mark-compact) collection when called', async () => {
    const collect = incrementalCollector();
    expect(typeof collect).toBe('function');
    const majors: PerformanceEntry[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(e);
    });
    observer.observe({ entryTypes: ['gc'] });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      // first a quiet moment: no full collection for 300 ms (jest's start may still be finishing one)
      for (let quiet = 0, seen = -1, waited = 0; quiet < 300 && waited < 10000; waited += 50) {
        await sleep(50);
        quiet = majors.length === seen ? quiet + 50 : 0;
        seen = majors.length;
      }
      majors.length = 0;
      collect!();
      // the collection runs alongside, in tasks of the event loop: let it run (allocating nothing
      // that could start one by itself), for at most 5 s (a loaded machine runs its tasks late)
      for (let i = 0; i < 1000 && majors.length === 0; i++) await sleep(5);
      expect(majors.length).toBeGreaterThan(0);
    } finally {
      observer.disconnect();
    }
  });
});
