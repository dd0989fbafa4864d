import type { Redis } from 'ioredis';
import { UPDATES_STREAM } from '../../mapping/keys';
import { flatRecord, numberOrNull } from '../store/replies';
import { compareIds } from '../store/streamIds';

export interface GroupHealth {
  readonly length: number;
  readonly lag: number | null;
  readonly pending: number;
  /** Entries trimmed before the group read them, since the stream began (null: Redis cannot tell). */
  readonly trimmedUnread: number | null;
  /** True when the group's position is older than the stream's first entry. */
  readonly behindFirstEntry: boolean;
}


/**
 * What XINFO says about the group (CONTRACT 4.3, loss detection): a reader that falls behind a
 * `MAXLEN ~` writer has entries trimmed before it reads them. `null` when the group does not exist.
 */
export const readGroupHealth = async (redis: Redis, group: string): Promise<GroupHealth | null> => {
  let groups: unknown;
  let stream: unknown;
  try {
    [groups, stream] = await Promise.all([redis.call('XINFO', 'GROUPS', UPDATES_STREAM), redis.call('XINFO', 'STREAM', UPDATES_STREAM)]);
  } catch (err) {
    if (/no such key/i.test((err as Error).message)) return null;
    throw err;
  }
  const g = (Array.isArray(groups) ? groups : []).map(flatRecord).find((r) => r.name === group);
  if (g === undefined) return null;
  const s = flatRecord(stream);
  const length = numberOrNull(s.length) ?? 0;
  const entriesAdded = numberOrNull(s['entries-added']);
  const entriesRead = numberOrNull(g['entries-read']);
  const first = Array.isArray(s['first-entry']) ? String((s['first-entry'] as unknown[])[0]) : null;
  const lastDelivered = String(g['last-delivered-id'] ?? '0-0');
  const behindFirstEntry = first !== null && compareIds(lastDelivered, first) < 0 && lastDelivered !== '0-0'
    ? true
    : first !== null && lastDelivered === '0-0' && entriesAdded !== null && entriesAdded > length;
  // Entries gone from the stream = entries-added − length; of those, the group had read entries-read.
  // Redis may not know entries-read (null); a group still at 0-0 has read none of them.
  const read = entriesRead ?? (lastDelivered === '0-0' ? 0 : null);
  const trimmedUnread = behindFirstEntry ? (entriesAdded !== null && read !== null ? Math.max(0, entriesAdded - length - read) : null) : 0;
  // Redis's own lag comes from entries-read bookkeeping, which a replica promoted by a failover
  // does not carry over (it kept reporting 505 for a group that had read everything): a group whose
  // position is the stream's last ID has read everything, whatever that bookkeeping says
  const lastGenerated = typeof s['last-generated-id'] === 'string' ? s['last-generated-id'] : null;
  const caughtUp = lastGenerated !== null && compareIds(lastDelivered, lastGenerated) >= 0;
  return { length, lag: caughtUp ? 0 : numberOrNull(g.lag), pending: numberOrNull(g.pending) ?? 0, trimmedUnread, behindFirstEntry };
};
