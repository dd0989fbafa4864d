import type { Redis } from 'ioredis';
import type { Metrics } from '../telemetry/metrics';
import type { Logger } from './logger';

/**
 * Redis's memory settings as they concern the connectors (CONTRACT 6.6). Under any
 * `maxmemory-policy` but `noeviction`, a full Redis deletes keys to make room — the config key, the
 * stream, consumer groups, backlogs, delivery records, idempotency keys — the very loss the delivery
 * guarantees exist to prevent. Under `noeviction` it refuses writes instead (`OOM …`), which the
 * connectors can answer and retry.
 *
 * Invariants (each has a row in test/redis.memory.test.ts):
 * 1. An unsafe policy (anything but `noeviction`) is reported at the first reading, when it changes
 *    to another unsafe one, and again every hour while it lasts; a return to `noeviction` once.
 * 2. A policy that cannot be read (`INFO` renamed or denied, an empty value) is unknown: reported
 *    once, at info level, and never counted as unsafe.
 * 3. Evictions are counted from the first reading on, as the growth of `evicted_keys` between two
 *    readings; a smaller value than the last (Redis restarted, `CONFIG RESETSTAT`) starts again.
 * 4. Out of memory (`OOM` replies) holds from a refused write until a write succeeds or a reading
 *    shows Redis below its `maxmemory` (or without one, or unreadable), so that a connector taken
 *    out of service by its readiness comes back without traffic.
 */
export const HOUR_MS = 3_600_000;

/** What one reading of `INFO memory` and `INFO stats` gave; null where a value could not be read. */
export interface MemoryReading {
  /** null: unknown (invariant 2), with `unknownWhy`. */
  readonly policy: string | null;
  readonly unknownWhy?: string;
  readonly evictedKeys: number | null;
  readonly usedMemory: number | null;
  /** `mem_not_counted_for_evict`: what Redis leaves out when it compares with `maxmemory`. */
  readonly notCounted: number | null;
  /** 0: no limit. */
  readonly maxMemory: number | null;
}

export interface WatchState {
  readonly policy?: string | null;
  readonly unsafeReportedAt?: number;
  readonly unknownReported: boolean;
  readonly evictedKeys?: number;
}

export type MemoryEvent =
  | { readonly kind: 'unsafe'; readonly policy: string; readonly maxMemory: number | null }
  | { readonly kind: 'safe_again'; readonly policy: string }
  | { readonly kind: 'unknown'; readonly why: string }
  | { readonly kind: 'evicted'; readonly count: number };

export const INITIAL: WatchState = { unknownReported: false };

/** 1 for `noeviction` or unknown, 0 for any other policy (the gauge `datastore_eviction_policy_safe`). */
export const isSafePolicy = (policy: string | null | undefined): boolean => policy === null || policy === undefined || policy === 'noeviction';

/** The next state and what to report, from one reading (invariants 1–3). */
export const observe = (s: WatchState, r: MemoryReading, now: number): { state: WatchState; events: MemoryEvent[] } => {
  const events: MemoryEvent[] = [];
  let { unsafeReportedAt, unknownReported } = s;
  if (r.policy === null) {
    if (!unknownReported) events.push({ kind: 'unknown', why: r.unknownWhy ?? 'maxmemory_policy is empty' });
    unknownReported = true;
    unsafeReportedAt = undefined;
  } else if (!isSafePolicy(r.policy)) {
    const due = unsafeReportedAt === undefined || r.policy !== s.policy || now - unsafeReportedAt >= HOUR_MS;
    if (due) {
      events.push({ kind: 'unsafe', policy: r.policy, maxMemory: r.maxMemory });
      unsafeReportedAt = now;
    }
  } else {
    if (s.policy !== undefined && s.policy !== null && !isSafePolicy(s.policy)) events.push({ kind: 'safe_again', policy: r.policy });
    unsafeReportedAt = undefined;
  }
  let evictedKeys = s.evictedKeys;
  if (r.evictedKeys !== null) {
    if (evictedKeys !== undefined && r.evictedKeys > evictedKeys) events.push({ kind: 'evicted', count: r.evictedKeys - evictedKeys });
    evictedKeys = r.evictedKeys;
  }
  return {
    state: { policy: r.policy, unknownReported, ...(unsafeReportedAt !== undefined ? { unsafeReportedAt } : {}), ...(evictedKeys !== undefined ? { evictedKeys } : {}) },
    events,
  };
};

/** Redis takes writes again: no limit, or what it counts against the limit is within it (invariant 4). */
export const belowLimit = (r: MemoryReading): boolean =>
  r.maxMemory === null || r.usedMemory === null || r.maxMemory === 0 || r.usedMemory - (r.notCounted ?? 0) <= r.maxMemory;

/** `INFO` text as fields; total (any line that is not `key:value` is skipped). */
export const parseInfo = (text: string): ReadonlyMap<string, string> => {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) out.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return out;
};

const numberOf = (fields: ReadonlyMap<string, string> | undefined, name: string): number | null => {
  const v = fields?.get(name);
  return v !== undefined && /^[0-9]+$/.test(v) ? Number(v) : null;
};

/** A refusal by the server (unknown or renamed command, no permission), as opposed to a lost connection. */
const isReplyError = (err: unknown): boolean => err instanceof Error && (err.name === 'ReplyError' || /^(ERR|NOPERM|WRONGPASS|NOAUTH)\b/.test(err.message));

/**
 * One reading. A refused `INFO` makes the values unknown; a connection error is thrown (the
 * caller tries again when connected).
 */
export const readMemory = async (redis: Redis): Promise<MemoryReading> => {
  const section = async (name: string): Promise<ReadonlyMap<string, string> | string> => {
    try {
      return parseInfo(await redis.info(name));
    } catch (err) {
      if (isReplyError(err)) return (err as Error).message;
      throw err;
    }
  };
  const memory = await section('memory');
  const stats = await section('stats');
  const m = typeof memory === 'string' ? undefined : memory;
  const policy = m?.get('maxmemory_policy') ?? '';
  return {
    policy: policy === '' ? null : policy,
    ...(policy === '' ? { unknownWhy: typeof memory === 'string' ? `INFO memory: ${memory}` : 'INFO memory has no maxmemory_policy' } : {}),
    evictedKeys: numberOf(typeof stats === 'string' ? undefined : stats, 'evicted_keys'),
    usedMemory: numberOf(m, 'used_memory'),
    notCounted: numberOf(m, 'mem_not_counted_for_evict'),
    maxMemory: numberOf(m, 'maxmemory'),
  };
};

/** Out of memory as readiness sees it (invariant 4). */
export interface OutOfMemory {
  /** A write of this kind was refused with OOM. */
  refused(write: string, error: string): void;
  /** A write succeeded. */
  written(): void;
  /** The readiness reason while it holds, else undefined. */
  reason(): string | undefined;
}

export const OUT_OF_MEMORY_REASON = 'data store is out of memory: writes are refused (OOM)';

/**
 * The memory watch of one connector: a reading at start (for `Datastore:RequireNoEviction`), one
 * every `intervalMs`, and one every `oomCheckMs` while writes are refused, each reported through
 * the log and the metrics.
 */
export const watchMemory = (o: {
  readonly redis: Redis;
  readonly intervalMs: number;
  readonly oomCheckMs?: number;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly now?: () => number;
}) => {
  const now = o.now ?? Date.now;
  let state = INITIAL;
  let oomSince: string | undefined;
  const apply = (r: MemoryReading) => {
    const next = observe(state, r, now());
    state = next.state;
    o.metrics.evictionPolicySafe.set(isSafePolicy(r.policy) ? 1 : 0);
    for (const e of next.events) {
      switch (e.kind) {
        case 'unsafe':
          o.log.error(
            { policy: e.policy, maxmemory: e.maxMemory },
            `Redis may evict connector data: maxmemory_policy is ${e.policy}, not noeviction — when Redis is full it deletes keys, among them the connector's configuration, process:updates, consumer groups, backlogs, delivery records and idempotency keys; set maxmemory-policy noeviction`,
          );
          break;
        case 'safe_again':
          o.log.info({ policy: e.policy }, 'Redis maxmemory_policy is noeviction again');
          break;
        case 'unknown':
          o.log.info({ why: e.why }, 'Redis maxmemory_policy cannot be read; it is not checked');
          break;
        case 'evicted':
          o.metrics.evictedKeys.inc(e.count);
          o.log.error({ evicted: e.count, policy: r.policy }, 'Redis evicted keys since the last check: connector data may be lost');
          break;
      }
    }
  };
  const read = async (): Promise<MemoryReading | undefined> => {
    try {
      const r = await readMemory(o.redis);
      apply(r);
      return r;
    } catch {
      return undefined; // not connected: the next reading tells
    }
  };
  const timer = setInterval(() => void read(), o.intervalMs);
  timer.unref();
  let oomTimer: NodeJS.Timeout | undefined;
  const clear = () => {
    oomSince = undefined;
    if (oomTimer !== undefined) clearInterval(oomTimer);
    oomTimer = undefined;
  };
  const outOfMemory: OutOfMemory = {
    refused: (write, error) => {
      o.metrics.outOfMemory.inc({ write });
      if (oomSince !== undefined) return;
      oomSince = error;
      oomTimer = setInterval(() => {
        void read().then((r) => {
          if (r === undefined || belowLimit(r)) clear();
        });
      }, o.oomCheckMs ?? 5000);
      oomTimer.unref();
    },
    written: () => {
      if (oomSince !== undefined) clear();
    },
    reason: () => (oomSince === undefined ? undefined : OUT_OF_MEMORY_REASON),
  };
  return {
    /** The first reading, once connected: what start-up checks `Datastore:RequireNoEviction` against. */
    first: async (): Promise<MemoryReading> => {
      const r = await readMemory(o.redis);
      apply(r);
      return r;
    },
    outOfMemory,
    stop: () => {
      clearInterval(timer);
      clear();
    },
  };
};
