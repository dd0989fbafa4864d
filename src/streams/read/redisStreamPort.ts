import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { defer, map } from 'rxjs';
import { claimLeaseKey, groupName, UPDATES_STREAM } from '../../mapping/keys';
import type { BatchRecords, DeliveryState, Settled } from './deliveryState';
import { decodeEntries, decodeReadReply } from './entries';
import { flatRecord } from '../store/replies';
import { compareIds } from '../store/streamIds';
import type { ConsumerInfo, StreamPort } from './reader';


/** One below the highest stream ID (see `touch`). */
const TOUCH_AFTER = '18446744073709551615-18446744073709551614';

/** A number, or a number written as a string (NaN for anything else). */
const toNumber = (u: unknown): number => (typeof u === 'number' ? u : Number(u));

/** The last ID of the recorded batch that holds `id` and goes on past it; undefined when none does. */
export const lastOfBatch = (records: BatchRecords, id: string): string | undefined => {
  for (const r of records.values()) if (compareIds(r.first, id) <= 0 && compareIds(id, r.last) < 0) return r.last;
  return undefined;
};

/** `XINFO CONSUMERS` under RESP2: one flat `[name, n, pending, n, idle, ms, …]` per consumer. Total. */
export const decodeConsumers = (u: unknown): ConsumerInfo[] =>
  (Array.isArray(u) ? u : []).map(flatRecord).map((r) => ({ name: String(r.name), pending: toNumber(r.pending) || 0, idleMs: toNumber(r.idle) || 0 }));

/**
 * The live StreamPort. Reads and claims go over `blocking`, a connection of their own (a blocked
 * XREADGROUP holds its connection); replies are decoded from their RESP2 shapes. Records are read
 * through `state`.
 */
export const redisStreamPort = (blocking: Redis, connectorId: string, consumer: string, state: DeliveryState): StreamPort => {
  const group = groupName(connectorId);
  /** This process's claim lease value: its consumer name and a token of its own (a restarted process of the same name is another holder). */
  const token = `${consumer} ${randomUUID()}`;
  return {
    consumer,
    createGroup: (start) =>
      defer(() =>
        blocking.call('XGROUP', 'CREATE', UPDATES_STREAM, group, start, 'MKSTREAM').catch((e: Error) => {
          // BUSYGROUP: the group exists and is resumed where it stopped.
          if (/BUSYGROUP/.test(e.message)) return 'exists';
          throw e;
        }),
      ),
    readPending: (owner, after, count) =>
      defer(() => blocking.call('XREADGROUP', 'GROUP', group, owner, 'COUNT', count, 'STREAMS', UPDATES_STREAM, after)).pipe(
        map((reply) => decodeReadReply(reply, UPDATES_STREAM)),
      ),
    readNew: (count, blockMs) =>
      defer(() =>
        blocking.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', UPDATES_STREAM, '>'),
      ).pipe(map((reply) => decodeReadReply(reply, UPDATES_STREAM))),
    consumers: () => defer(() => blocking.call('XINFO', 'CONSUMERS', UPDATES_STREAM, group)).pipe(map(decodeConsumers)),
    claimFrom: (from, to, minIdleMs, count, records) =>
      defer(async () => {
        const idsOf = (pending: unknown[]) => pending.map((p) => String((p as unknown[])[0]));
        const ids = idsOf((await blocking.call('XPENDING', UPDATES_STREAM, group, '-', '+', count, from)) as unknown[]);
        if (ids.length === 0) return [];
        // A page that ends inside a recorded batch takes the rest of it too: the one XCLAIM below
        // moves whole batches. Cut in two, a batch whose first part was claimed and replayed (the
        // round broke off: a timeout, a kill) went out again under its webhook-id with part of its
        // points — the same id with another content (a chaos run saw it).
        const last = lastOfBatch(records, ids[ids.length - 1]!);
        if (last !== undefined) ids.push(...idsOf((await blocking.call('XPENDING', UPDATES_STREAM, group, `(${ids[ids.length - 1]}`, last, 1_000_000, from)) as unknown[]));
        const claimed = (await blocking.call('XCLAIM', UPDATES_STREAM, group, to, minIdleMs, ...ids)) as unknown[];
        // an entry deleted from the stream comes back as nil (Redis < 7) or not at all (Redis 7)
        return decodeEntries(claimed.filter((c) => c !== null));
      }),
    // a read of the pending entries after the highest ID there can be (the highest itself is
    // answered without looking the consumer up): nothing comes back, and the consumer was seen
    touch: (owner) => defer(() => blocking.call('XREADGROUP', 'GROUP', group, owner, 'COUNT', 1, 'STREAMS', UPDATES_STREAM, TOUCH_AFTER)),
    deleteConsumer: (owner) => defer(() => blocking.call('XGROUP', 'DELCONSUMER', UPDATES_STREAM, group, owner)),
    takeClaimLease: (ms) => defer(() => blocking.set(claimLeaseKey(connectorId), token, 'PX', ms, 'NX')).pipe(map((r) => r === 'OK')),
    // GET then PEXPIRE / DEL: between the two the lease could pass to another holder only if it
    // expired meanwhile, which a renewal well within its time does not let happen
    renewClaimLease: (ms) =>
      defer(async () => (await blocking.get(claimLeaseKey(connectorId))) === token && (await blocking.pexpire(claimLeaseKey(connectorId), ms)) === 1),
    releaseClaimLease: () =>
      defer(async () => ((await blocking.get(claimLeaseKey(connectorId))) === token ? blocking.del(claimLeaseKey(connectorId)) : 0)),
    settled: () =>
      defer(async (): Promise<Settled> => {
        const summary = (await blocking.call('XPENDING', UPDATES_STREAM, group)) as unknown[];
        if (toNumber(summary[0]) > 0) return { before: String(summary[1]) };
        const groups = ((await blocking.call('XINFO', 'GROUPS', UPDATES_STREAM)) as unknown[]).map(flatRecord);
        return { upTo: String(groups.find((g) => g.name === group)?.['last-delivered-id'] ?? '0-0') };
      }),
    loadRecords: () => state.load(),
    forgetSettled: (s) => state.forgetSettled(s),
  };
};
