import * as E from 'fp-ts/Either';
import { ReplyError, type Redis } from 'ioredis';
import { isAppends, renderWrites, type Command, type Write } from '../../mapping/commands';
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
  /** Redis refused it, or it failed before anything was applied (EXEC aborted, a command refused). */
  | { readonly tag: 'aborted'; readonly error: string }
  /**
   * Sent, and no answer came back (connection lost, command timeout): it may have been applied;
   * or `partly`: that command failed inside the `EXEC` after the ones before it were applied.
   */
  | { readonly tag: 'unknown_outcome'; readonly error: string; readonly partly?: string }
  /** Applied on the master, not confirmed by enough replicas in time. */
  | { readonly tag: 'unconfirmed'; readonly error: string; readonly replicas: number; readonly acked: number }
  /** `process:updates` is another type: a MULTI would leave its SETs behind a failed XADD. */
  | { readonly tag: 'not_a_stream'; readonly type: string };

/** What a key another request took says: another request with it (reused), one under way, or its stored answer. */
export type KeyHeld = Exclude<Verdict, { kind: 'gone' }>;

/** One request's writes, all on one connection (a `WAIT` confirms what was written on its own connection). */
export interface StoreSession {
  /** Stream entries go by append script on this connection, as far as it knows now (what `exec` will do); absent is false. */
  readonly appendsByScript?: boolean;
  /** Takes the key with a pending marker, or tells what is stored under it (CONTRACT 5.1.1). */
  takeKey(key: string, hash: string, lockMs: number): Promise<E.Either<StoreFailure, 'taken' | KeyHeld>>;
  /** Gives a taken key back (nothing was written under it). */
  releaseKey(key: string): Promise<void>;
  /** `process:updates` is a stream, or absent. */
  checkStream(): Promise<E.Either<StoreFailure, void>>;
  /** The write in one MULTI/EXEC, its stream entries rendered as the connection takes them. */
  exec(writes: readonly Write[]): Promise<E.Either<StoreFailure, void>>;
  /** `WAIT n timeout` when `Datastore:WaitReplicas` is above 0; else at once. */
  confirm(): Promise<E.Either<StoreFailure, void>>;
}

export interface InboundStore {
  /** A session on a connected connection, or `not_connected`. */
  session(): Promise<E.Either<StoreFailure, StoreSession>>;
}

/**
 * Errors of a command that was sent and got no answer (ioredis's own, not Redis's replies). With
 * `maxRetriesPerRequest: 0`, ioredis fails the commands it had sent when their connection closes
 * with "Reached the max retries per request limit": those may have run (a command it could not
 * send fails with "Stream isn't writeable" instead, and did not).
 */
const OUTCOME_UNKNOWN = /timed out|Connection is closed|ECONNRESET|EPIPE|socket hang up|max retries per request/i;

type RedisFailure = Error & { readonly previousErrors?: readonly Error[] };
/** The Redis error code of a reply (its first word, as the protocol sends it): undefined for an error that is no reply. */
const codeOf = (e: Error): string | undefined => (e instanceof ReplyError ? e.message.split(' ', 1)[0] : undefined);

/** The error and the errors of the commands a `MULTI` refused to queue, as one text. */
const errorText = (err: unknown): string => {
  const e = (err instanceof Error ? err : new Error(String(err))) as RedisFailure;
  return [...new Set([e, ...(e.previousErrors ?? [])].map((x) => x.message))].join('; ');
};

/**
 * A failure as its tag. A reply of Redis's is told by its error code — of the reply, or of the
 * commands a `MULTI` refused to queue (`EXECABORT`: nothing of it ran): `READONLY`, `OOM`, else
 * refused. An error that is no reply is the connection's: the outcome of what was `sent` is unknown.
 */
export const failureOf = (err: unknown, sent: boolean): StoreFailure => {
  const e = (err instanceof Error ? err : new Error(String(err))) as RedisFailure;
  const all = [e, ...(e.previousErrors ?? [])];
  const error = errorText(e);
  const codes = all.map(codeOf);
  if (codes.includes('READONLY')) return { tag: 'read_only', error };
  if (codes.includes('OOM')) return { tag: 'out_of_memory', error };
  if (codes[0] === undefined && sent && OUTCOME_UNKNOWN.test(e.message)) return { tag: 'unknown_outcome', error };
  return { tag: 'aborted', error };
};

/**
 * The replies of an `EXEC`: applied whole; refused whole (every command failed: nothing applied);
 * or a command failed while the others were applied — not "nothing written", so its outcome is
 * told as unknown, naming the command.
 */
const partly = (replies: ReadonlyArray<[Error | null, unknown]>, names: readonly string[]): E.Either<StoreFailure, void> => {
  const failed = replies.findIndex(([err]) => err !== null);
  if (failed < 0) return E.right(undefined);
  const first = replies[failed]![0]!;
  if (replies.every(([err]) => err !== null)) return E.left(failureOf(first, false));
  const error = `${names[failed]} failed inside the transaction while the other commands were applied: ${first.message}`;
  return E.left({ tag: 'unknown_outcome', error, partly: names[failed]! });
};

/**
 * Runs commands in one MULTI/EXEC; Left when EXEC failed or any command in it did. A command that
 * failed inside the `EXEC` while others were applied (CONTRACT 5.1 rules it out: the probe checks
 * what the script runs; an ACL changed since is what is left) is not "nothing written": its
 * outcome is told as unknown.
 */
export const execAtomically = async (redis: Redis, commands: readonly Command[]): Promise<E.Either<StoreFailure, void>> => {
  try {
    const replies = await redis.multi(commands as unknown as string[][]).exec();
    if (replies === null) return E.left({ tag: 'aborted', error: 'transaction aborted' });
    return partly(replies, commands.map((c) => c[0]));
  } catch (err) {
    return E.left(failureOf(err, true));
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
        // a key of another type (a foreign writer's): held, and unreadable
        if (codeOf(err) === 'WRONGTYPE') return '';
        throw err;
      });
      const verdict = verdictOf(decodeStored(text), hash, text !== null);
      if (verdict.kind !== 'gone') return E.right(verdict);
    }
    return E.right({ kind: 'in_progress' });
  } catch (err) {
    // nothing was written that matters: at worst a marker that expires by itself
    return E.left(failureOf(err, false));
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
 * The one `MULTI`, its stream entries rendered as the connection takes them: by script where the
 * probe answered, else as `XADD`s; and once more as `XADD`s when Redis refused the transaction for
 * its `EVAL`s alone (`EXECABORT`: nothing of it ran), or an `EVAL` failed inside it (an ACL changed
 * since the probe: told as a partly applied write, and no script is sent on this connection again
 * until it reconnects).
 */
const execOn = async (redis: Redis, mode: AppendMode, writes: readonly Write[]): Promise<E.Either<StoreFailure, void>> => {
  if (!writes.some(isAppends) || !mode.scripted()) return execAtomically(redis, renderWrites(writes, false));
  try {
    const rendered = renderWrites(writes, true);
    const replies = await redis.multi(rendered as unknown as string[][]).exec();
    if (replies === null) return E.left({ tag: 'aborted', error: 'transaction aborted' });
    const outcome = partly(replies, rendered.map((c) => c[0]));
    // the script failed inside the EXEC (its XADD refused since the probe): no script again until probed
    if (E.isLeft(outcome) && outcome.left.tag === 'unknown_outcome' && outcome.left.partly === 'eval') mode.refused(outcome.left.error);
    return outcome;
  } catch (err) {
    if (!refusedForScript(err)) return E.left(failureOf(err, true));
    mode.refused(errorText(err));
    return execAtomically(redis, renderWrites(writes, false));
  }
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
      if (type instanceof Error) return E.left(failureOf(type, false));
      return type === 'stream' || type === 'none' ? E.right(undefined) : E.left({ tag: 'not_a_stream', type });
    },
    exec: (writes) => execOn(redis, mode, writes),
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
