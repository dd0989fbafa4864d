import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void;

/**
 * Asks V8 for a full collection that runs incrementally, alongside the program (the gc extension's
 * `{type: 'major', execution: 'async'}`): no pause of the size of the heap.
 *
 * Why (measured with `npm run bench -- get-all-1m`): while a GET of everything scans a
 * million keys, V8 promotes nearly every key string the SCAN replies decode into the old
 * generation (a third of all it allocates survives each young collection, though none of it is
 * reachable), and nothing starts a full collection until the old generation has grown by about
 * 30 MB. Asking for one every 200,000 keys keeps that garbage from piling up.
 *
 * `gc` is not exposed to programs unless node starts with `--expose-gc`; the flag set here makes
 * V8 install it in contexts made afterwards, and the fresh context made here hands it over. Where
 * that fails (another runtime), there is no collector, and nothing else changes.
 */
export const incrementalCollector = (): (() => void) | undefined => {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    if (typeof gc !== 'function') return undefined;
    return () => (gc as Gc)({ type: 'major', execution: 'async' });
  } catch {
    return undefined;
  }
};
