import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { isOutOfMemory } from '../../streams/store/replies';
import { hasScript, withoutScripts, type Command } from '../../mapping/commands';
import { UPDATES_STREAM } from '../../mapping/keys';
import { appendMode, refusedForScript, type AppendLog, type AppendMode } from './appendMode';
import { decodeStored, pendingCommand, verdictOf, type Verdict } from './idempotency';

/**
 * The inbound connector's writes as a port (CONTRACT 5.1, 5.1.1, 6.6): the idempotency key, the
 * stream check, the one `MULTI`, and `WAIT` — each answering a value or a tagged failure. The route
 * decides on those tags alone, so its decisions are tested without Redis; the one live
 * implementation below is tested against a private Redis.
 */
export type StoreFailure =
  /** No connection to write on: nothing was sent. */
  | { readonly tag: 'not_connected' }
  /** The node is a replica (a failover is under way): refused, nothing written. */
  | { readonly tag: 'read_only'; readonly error: string }
  /** Redis is full under `noeviction`: refused, nothing written. */
  | { readonly tag: 'out_of_memory'; readonly error: string }
  /** Refused or failed before anything was applied that counts (EXEC aborted, a command refused). */
  | { readonly tag: 'aborted'; readonly error: string }
  /** Sent, and no answer came back (connection lost, command timeout): it may have been applied. */
  | { readonly tag: 'unknown_outcome'; readonly error: string }
  /** Applied on the master, not confirmed by enough replicas in time. */
  | { readonly tag: 'unconfirmed'; readonly error: string; readonly replicas: number; readonly acked: number }
  /** `process:updates` is another type: a MULTI would leave its SETs behind a failed XADD. */
  | { readonly tag: 'not_a_stream'; readonly type: string };

/** What a key another request took says: another request with it (reused), one under way, or its stored answer. */
export type KeyHeld = Exclude<Verdict, { kind: 'gone' }>;

/** One request's writes, all on one connection (a `WAIT` confirms what was written on its own connection). */
export interface StoreSession {
  /** Stream entries go by append script on this connection (`writeCommands`' `byScript`); absent is false. */
  readonly appendsByScript?: boolean;
  /** Takes the key with a pending marker, or tells what is stored under it (CONTRACT 5.1.1). */
  takeKey(key: string, hash: string, lockMs: number): Promise<E.Either<StoreFailure, 'taken' | KeyHeld>>;
  /** Gives a taken key back (nothing was written under it). */
  releaseKey(key: string): Promise<void>;
  /** `process:updates` is a stream, or absent. */
  checkStream(): Promise<E.Either<StoreFailure, void>>;
  /** The commands in one MULTI/EXEC (an append script as its `XADD`s where the connection may not run it). */
  exec(commands: readonly Command[]): Promise<E.Either<StoreFailure, void>>;
  /** `WAIT n timeout` when `Datastore:WaitReplicas` is above 0; else at once. */
  confirm(): Promise<E.Either<StoreFailure, void>>;
}

export interface InboundStore {
  /** A session on a connected connection, or `not_connected`. */
  session(): Promise<E.Either<StoreFailure, StoreSession>>;
}

/**
 * Errors of a command that was sent and got no answer. With `maxRetriesPerRequest: 0`, ioredis
 * fails the commands it had sent when their connection closes with "Reached the max retries per
 * request limit": those may have run (a command it could not send fails with "Stream isn't
 * writeable" instead, and did not).
 */
const OUTCOME_UNKNOWN = /timed out|Connection is closed|ECONNRESET|EPIPE|socket hang up|max retries per request/i;

/** A refusal or failure as its tag; `sent` when the command went out (its outcome may be unknown). */
export const failureOf = (error: string, unknown: boolean): StoreFailure =>
  /READONLY/.test(error)
    ? { tag: 'read_only', error }
    : isOutOfMemory(error)
      ? { tag: 'out_of_memory', error }
      : unknown
        ? { tag: 'unknown_outcome', error }
        : { tag: 'aborted', error };

/** Runs commands in one MULTI/EXEC; Left when EXEC failed or any command in it did. */
export const execAtomically = async (redis: Redis, commands: readonly Command[]): Promise<E.Either<StoreFailure, void>> => {
  try {
    const replies = await redis.multi(commands as unknown as string[][]).exec();
    if (replies === null) return E.left({ tag: 'aborted', error: 'transaction aborted' });
    const failed = replies.find(([err]) => err !== null);
    return failed === undefined ? E.right(undefined) : E.left(failureOf(String(failed[0]), false));
  } catch (err) {
    const e = err as Error & { previousErrors?: Error[] };
    const error = [...new Set([e.message, ...(e.previousErrors ?? []).map((p) => p.message)])].join('; ');
    return E.left(failureOf(error, OUTCOME_UNKNOWN.test(e.message)));
  }
};

/** CONTRACT 5.1.1: `WAIT n timeout` on the connection that wrote; Left unless n replicas have the write. */
export const waitForReplicas = async (redis: Redis, n: number, timeoutMs: number): Promise<E.Either<StoreFailure, void>> => {
  try {
    const acked = Number(await redis.call('WAIT', n, timeoutMs));
    return acked >= n ? E.right(undefined) : E.left({ tag: 'unconfirmed', error: `WAIT: ${acked} of ${n} replicas`, replicas: n, acked });
  } catch (err) {
    return E.left({ tag: 'unconfirmed', error: (err as Error).message, replicas: n, acked: 0 });
  }
};

/**
 * Takes an idempotency key for this request ('taken'), or tells what is stored under it. A key
 * that expired between the two reads is tried once more.
 */
const takeKey = async (redis: Redis, key: string, hash: string, lockMs: number): Promise<E.Either<StoreFailure, 'taken' | KeyHeld>> => {
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      const [cmd, ...args] = pendingCommand(key, hash, lockMs);
      if ((await redis.call(cmd, ...args)) === 'OK') return E.right('taken');
      const text = await redis.get(key).catch((err: Error) => {
        if (/WRONGTYPE/.test(err.message)) return '';
        throw err;
      });
      const verdict = verdictOf(decodeStored(text), hash, text !== null);
      if (verdict.kind !== 'gone') return E.right(verdict);
    }
    return E.right({ kind: 'in_progress' });
  } catch (err) {
    // nothing was written that matters: at worst a marker that expires by itself
    return E.left(failureOf((err as Error).message, false));
  }
};

export interface RedisInboundStoreOptions {
  readonly redis: Redis;
  readonly isConnected: () => boolean;
  /**
   * With `waitReplicas` > 0 the writes go over `writer()`, a connection of a small pool of their
   * own: `WAIT` blocks the connection it is sent on, and must not hold up anything else.
   */
  readonly waitReplicas: number;
  readonly waitTimeoutMs: number;
  readonly writer?: () => Promise<Redis | undefined>;
  /** Where the append mode of each connection is told (README "How a write reaches Redis"). */
  readonly log?: AppendLog;
}

/**
 * The one `MULTI`, with its append script as `XADD`s when the connection may no longer run it (it
 * closed since the commands were planned, or the probe failed), and once more as `XADD`s when Redis
 * refused the transaction for its `EVAL` alone (`EXECABORT`: nothing of it ran).
 */
const execOn = async (redis: Redis, mode: AppendMode, commands: readonly Command[]): Promise<E.Either<StoreFailure, void>> => {
  if (!hasScript(commands)) return execAtomically(redis, commands);
  if (!mode.scripted()) return execAtomically(redis, withoutScripts(commands));
  const written = await execAtomically(redis, commands);
  if (E.isRight(written) || written.left.tag !== 'aborted' || !refusedForScript(written.left.error)) return written;
  mode.refused(written.left.error);
  return execAtomically(redis, withoutScripts(commands));
};

export const redisInboundStore = (o: RedisInboundStoreOptions): InboundStore => {
  const modes = new WeakMap<Redis, AppendMode>();
  const modeOf = (redis: Redis): AppendMode => {
    let mode = modes.get(redis);
    if (mode === undefined) modes.set(redis, (mode = appendMode(redis, o.log ?? { info: () => undefined })));
    return mode;
  };
  // probed at once where the writes go (the pool's connections when they are first used)
  if (o.waitReplicas === 0) modeOf(o.redis);
  const sessionOn = (redis: Redis, mode = modeOf(redis)): StoreSession => ({
    appendsByScript: mode.scripted(),
    takeKey: (key, hash, lockMs) => takeKey(redis, key, hash, lockMs),
    releaseKey: async (key) => void (await redis.del(key).catch(() => undefined)),
    checkStream: async () => {
      // CONTRACT 6.5: Redis does not roll a MULTI back, so an XADD must not be able to fail inside
      // it (its SETs would stay): process:updates is a stream, or absent, or nothing is written
      const type = await redis.type(UPDATES_STREAM).catch((err: Error) => err);
      if (type instanceof Error) return E.left(failureOf(type.message, false));
      return type === 'stream' || type === 'none' ? E.right(undefined) : E.left({ tag: 'not_a_stream', type });
    },
    exec: (commands) => execOn(redis, mode, commands),
    confirm: async () => (o.waitReplicas > 0 ? waitForReplicas(redis, o.waitReplicas, o.waitTimeoutMs) : E.right(undefined)),
  });
  return {
    session: async () => {
      if (!o.isConnected()) return E.left({ tag: 'not_connected' });
      const writer = o.waitReplicas > 0 ? await o.writer?.() : o.redis;
      return writer === undefined ? E.left({ tag: 'not_connected' }) : E.right(sessionOn(writer));
    },
  };
};
