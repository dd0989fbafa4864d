import type { PointFilter, Ranges } from '../../config/webhookSettings';
import { toBatch, type Batch } from '../read/batches';
import type { DecodedEntry } from '../read/entries';
import { compareIds } from '../store/streamIds';

/**
 * A webhook's filter (CONTRACT 4.5) and the part of a batch it gets. Pure.
 *
 * Invariants (each has a test in test/streams.filter.test.ts):
 * 1. A point matches when it matches every field given; a field left out matches everything; a
 *    point without an integer value for a field given matches no range of it.
 * 2. A webhook's part of a batch holds its matching entries in stream order; none matching, it
 *    has no part (null): nothing is sent to it, and the batch counts as delivered to it.
 * 3. The part's webhook-id is `{first}_{last}` of the matching entries — or the range recorded
 *    for the webhook when the batch was formed, as long as every matching entry lies within it
 *    (entries deleted from the stream meanwhile do not change it, as for a whole batch).
 */
/** Whether `v` lies in one of the ranges; every value does when there are none, and no value when `v` is missing. */
export const inRanges = (rs: Ranges | undefined, v: number | undefined): boolean => {
  if (rs === undefined) return true;
  if (v === undefined) return false;
  for (const [lo, hi] of rs) if (v >= lo && v <= hi) return true;
  return false;
};

export const matches = (f: PointFilter, e: Pick<DecodedEntry, 'casdu' | 'ioa' | 'type'>): boolean =>
  inRanges(f.casdu, e.casdu) && inRanges(f.ioa, e.ioa) && inRanges(f.types, e.type);

/** `{first}_{last}` as recorded, split; undefined when it is not one. */
const splitRange = (recorded: string | undefined): [string, string] | undefined => {
  // a reporting webhook's part (CONTRACT 4.8) goes on after a space (`encodePart`): its range comes first
  const range = recorded?.split(' ', 1)[0];
  const bar = range?.indexOf('_') ?? -1;
  return range === undefined || bar < 0 ? undefined : [range.slice(0, bar), range.slice(bar + 1)];
};

/**
 * The webhook's part of the batch made of `entries` (invariants 2, 3); `recorded` is the range
 * written for it with the batch's record. The part holds the ids it sends, and keeps the batch's
 * `first` (the record's key) and marks: it is marked and acknowledged as the batch is.
 */
export const partFor = (f: PointFilter, entries: readonly DecodedEntry[], batch: Batch, recorded?: string): Batch | null => {
  const mine = entries.filter((e) => matches(f, e));
  if (mine.length === 0) return null;
  const computed = toBatch(mine);
  const r = splitRange(recorded);
  const webhookId =
    r !== undefined && compareIds(mine[0]!.id, r[0]) >= 0 && compareIds(mine[mine.length - 1]!.id, r[1]) <= 0 ? `${r[0]}_${r[1]}` : computed.webhookId;
  return { ...computed, webhookId, first: batch.first, recorded: batch.recorded, done: batch.done };
};
