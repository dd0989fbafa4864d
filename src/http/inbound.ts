import * as E from 'fp-ts/Either';
import { isOutOfMemory } from '../datastoreErrors';
import { parseJsonBody } from '../mapping/writtenNumbers';
import type { DataRoute } from './app';
import type { Redis } from 'ioredis';
import { applyMappings } from '../mapping/apply';
import { decodeStored, doneCommand, pendingCommand, requestHash, validIdempotencyKey, verdictOf, type Verdict } from './idempotency';
import { errorCommands, writeCommands, type Command } from '../mapping/commands';
import { failureBody, okBody } from '../mapping/responses';
import { idempotencyKey, UPDATES_STREAM } from '../mapping/keys';
import type { Mapping } from '../mapping/types';
import type { Logger } from 'pino';
import { isJsonMediaType, readBody, type BodyBudget } from './body';
import { MAX_QUERY_PARAMETERS, parseRawQuery } from './query';
import type { Metrics } from './metrics';
import { NOT_CONNECTED, sendError, sendJsonText, sendProblem } from './problem';

export interface InboundDeps {
  readonly connectorId: string;
  readonly topics: ReadonlyMap<string, readonly Mapping[]>;
  readonly maxBodyBytes: number;
  /** Shared by every request of the connector (`Http:MaxBodyBytesInFlight`). */
  readonly bodyBudget?: BodyBudget;
  readonly streamMaxLength: number;
  readonly redis: Redis;
  readonly isConnected: () => boolean;
  readonly now: () => Date;
  readonly log: Logger;
  readonly metrics: Metrics;
  /**
   * CONTRACT 5.1.1: replicas that must acknowledge a write (`WAIT`) before it is answered 200, and
   * how long to wait. With N > 0 the writes go over `writer()`, a connection of a small pool of
   * their own: `WAIT` blocks the connection it is sent on, and must not hold up anything else.
   */
  readonly waitReplicas?: number;
  readonly waitTimeoutMs?: number;
  readonly writer?: () => Promise<Redis | undefined>;
  readonly idempotencyTtlSeconds?: number;
  /** How long a first request's "pending" marker holds its key (it expires if the process dies). */
  readonly idempotencyLockMs?: number;
  /** CONTRACT 6.6: told of every write refused with OOM, and of every write that succeeded (readiness). */
  readonly outOfMemory?: { refused(write: string, error: string): void; written(): void };
}

/** Why a transaction did not answer 200: it was not applied, or nobody can tell (CONTRACT 5.1). */
export interface WriteFailure {
  readonly error: string;
  /** The request went out and no answer came back (connection lost, command timeout): it may have been applied. */
  readonly unknown: boolean;
  /** The problem details' `detail` when it is not "not connected" (a read-only node, unconfirmed replicas). */
  readonly detail?: string;
  /** Applied on the master, not confirmed by enough replicas (CONTRACT 5.1.1). */
  readonly unconfirmed?: boolean;
  /** Refused with OOM: nothing was written (CONTRACT 6.6). */
  readonly outOfMemory?: boolean;
}

export const READ_ONLY_DETAIL = 'the data store node is a replica (a failover is under way); nothing was written';
export const OUT_OF_MEMORY_DETAIL = 'the data store is out of memory (it refuses writes); nothing was written';
/** CONTRACT 6.6: how long a client should wait before it retries a write refused for want of memory. */
export const OUT_OF_MEMORY_RETRY_AFTER = '5';
const unconfirmedDetail = (n: number, acked: number) =>
  `the write was applied on the master but not confirmed by ${n} replica${n === 1 ? '' : 's'} (${acked} confirmed in time); retry with the same Idempotency-Key to avoid writing twice`;

/**
 * Errors of a command that was sent and got no answer. With `maxRetriesPerRequest: 0`, ioredis
 * fails the commands it had sent when their connection closes with "Reached the max retries per
 * request limit": those may have run (a command it could not send fails with "Stream isn't
 * writeable" instead, and did not).
 */
const OUTCOME_UNKNOWN = /timed out|Connection is closed|ECONNRESET|EPIPE|socket hang up|max retries per request/i;

/** Runs commands in one MULTI/EXEC; Left when EXEC failed or any command in it did. */
export const execAtomically = async (redis: Redis, commands: readonly Command[]): Promise<E.Either<WriteFailure, void>> => {
  try {
    const replies = await redis.multi(commands as unknown as string[][]).exec();
    if (replies === null) return E.left({ error: 'transaction aborted', unknown: false });
    const failed = replies.find(([err]) => err !== null);
    return failed === undefined ? E.right(undefined) : E.left(failure(String(failed[0]), false));
  } catch (err) {
    const e = err as Error & { previousErrors?: Error[] };
    const error = [...new Set([e.message, ...(e.previousErrors ?? []).map((p) => p.message)])].join('; ');
    return E.left(failure(error, OUTCOME_UNKNOWN.test(e.message)));
  }
};

const failure = (error: string, unknown: boolean): WriteFailure =>
  /READONLY/.test(error)
    ? { error, unknown: false, detail: READ_ONLY_DETAIL }
    : isOutOfMemory(error)
      ? { error, unknown: false, detail: OUT_OF_MEMORY_DETAIL, outOfMemory: true }
      : { error, unknown };

/** CONTRACT 5.1.1: `WAIT n timeout` on the connection that wrote; Left unless n replicas have the write. */
export const waitForReplicas = async (redis: Redis, n: number, timeoutMs: number): Promise<E.Either<WriteFailure, void>> => {
  try {
    const acked = Number(await redis.call('WAIT', n, timeoutMs));
    return acked >= n ? E.right(undefined) : E.left({ error: `WAIT: ${acked} of ${n} replicas`, unknown: false, unconfirmed: true, detail: unconfirmedDetail(n, acked) });
  } catch (err) {
    const error = (err as Error).message;
    return E.left({ error, unknown: false, unconfirmed: true, detail: unconfirmedDetail(n, 0) });
  }
};

export const OUTCOME_UNKNOWN_DETAIL = 'the data store did not answer the write: its outcome is unknown (it may have been applied)';

/** CONTRACT 5.1: every check of the table, in its order, then the all-or-nothing write. */
export const inboundRoutes = (d: InboundDeps): DataRoute[] => [
  { method: 'post', path: '/api/datapoints', handler: async (req, res) => {
    const unavailable = (topic: string, f: WriteFailure, msg: string): void => {
      d.metrics.inboundWrites.inc({ outcome: f.unconfirmed ? 'unconfirmed' : 'failed' });
      if (f.outOfMemory) d.outOfMemory?.refused('request', f.error);
      d.log.error(
        { topic, err: f.error, outcomeUnknown: f.unknown || undefined, outOfMemory: f.outOfMemory },
        f.unknown ? 'the data store did not answer; the outcome of the write is unknown' : f.unconfirmed ? 'the write was not confirmed by enough replicas' : msg,
      );
      sendProblem(res, 503, f.unknown ? OUTCOME_UNKNOWN_DETAIL : f.detail ?? NOT_CONNECTED, f.outOfMemory ? { 'Retry-After': OUT_OF_MEMORY_RETRY_AFTER } : {});
    };
    const receivedAt = d.now().toISOString();
    // every parameter of the raw query counts (CONTRACT 6.5): a second topic anywhere is refused
    const query = parseRawQuery(req.url ?? '');
    const topics = query.values('topic');
    const topic = topics[0];
    if (topics.length !== 1 || topic === undefined || topic === '' || query.count > MAX_QUERY_PARAMETERS) {
      sendError(res, 400, 'missing_topic', "query parameter 'topic' is required, once, and must not be empty (at most 1000 parameters)");
      return;
    }
    if (!isJsonMediaType(req.headers['content-type'])) {
      sendError(res, 415, 'unsupported_media_type', 'the content type must be application/json');
      return;
    }
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      // CONTRACT 6.5: a compressed body would otherwise be read as JSON text
      sendError(res, 415, 'unsupported_media_type', 'the content encoding must be identity (no compression)');
      return;
    }
    const body = await readBody(req, res, d.maxBodyBytes, d.bodyBudget);
    if (!body.ok) {
      if (body.reason === 'busy') {
        res.setHeader('Connection', 'close');
        sendProblem(res, 503, 'too many request bodies are being received at once; try again shortly', { 'Retry-After': '1' });
        return;
      }
      if (body.reason === 'too_large') {
        // The rest of the body is not read: close the connection after answering.
        res.setHeader('Connection', 'close');
        sendError(res, 413, 'payload_too_large', `the body exceeds ${d.maxBodyBytes} bytes`);
      }
      return;
    }
    let json: unknown;
    try {
      json = parseJsonBody(body.text);
    } catch (err) {
      sendError(res, 400, 'invalid_json', `the body is not valid JSON: ${(err as Error).message}`);
      return;
    }
    if (json === null || typeof json !== 'object' || Array.isArray(json)) {
      sendError(res, 400, 'invalid_body', 'the body must be a JSON object');
      return;
    }
    const mappings = d.topics.get(topic);
    if (mappings === undefined) {
      sendError(res, 404, 'unknown_topic', `No mappings are configured for topic '${topic}'`);
      return;
    }
    const keyHeader = req.headers['idempotency-key'];
    if (keyHeader !== undefined && !validIdempotencyKey(keyHeader)) {
      sendError(res, 400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces');
      return;
    }
    if (!d.isConnected()) {
      sendProblem(res, 503, NOT_CONNECTED);
      return;
    }
    const writer = (d.waitReplicas ?? 0) > 0 ? await d.writer?.() : d.redis;
    if (writer === undefined) {
      sendProblem(res, 503, NOT_CONNECTED);
      return;
    }
    const confirm = async (): Promise<E.Either<WriteFailure, void>> =>
      (d.waitReplicas ?? 0) > 0 ? waitForReplicas(writer, d.waitReplicas!, d.waitTimeoutMs ?? 1000) : E.right(undefined);

    // CONTRACT 5.1.1: a key already taken answers from what is stored under it, and writes nothing
    let idem: { key: string; hash: string } | undefined;
    if (keyHeader !== undefined) {
      const key = idempotencyKey(d.connectorId, keyHeader);
      const hash = requestHash(topic, body.bytes);
      const taken = await takeKey(writer, key, hash, d.idempotencyLockMs ?? 10000);
      if (E.isLeft(taken)) return unavailable(topic, taken.left, 'taking the idempotency key failed; nothing was written');
      const verdict = taken.right;
      if (verdict !== 'taken') {
        if (verdict.kind === 'reused') {
          sendError(res, 422, 'idempotency_key_reused', 'this Idempotency-Key was used for another topic or body');
          return;
        }
        if (verdict.kind === 'in_progress') {
          sendError(res, 409, 'idempotency_key_in_progress', 'a request with this Idempotency-Key is being processed; retry shortly');
          return;
        }
        if (verdict.kind === 'replay') {
          // a stored 200 is confirmed again: the first request may have got a WaitReplicas 503
          const confirmed = verdict.status === 200 ? await confirm() : E.right(undefined);
          if (E.isLeft(confirmed)) return unavailable(topic, confirmed.left, 'the replayed write was not confirmed by enough replicas');
          d.metrics.inboundWrites.inc({ outcome: 'replayed' });
          res.setHeader('Idempotent-Replayed', 'true');
          sendJsonText(res, verdict.status, verdict.body);
          return;
        }
      }
      idem = { key, hash };
    }
    /** A failure before anything was written gives the key back, so that a retry can write. */
    const release = async (f: WriteFailure): Promise<void> => {
      if (idem !== undefined && !f.unknown) await writer.del(idem.key).catch(() => undefined);
    };
    const stored = (status: number, text: string): Command[] =>
      idem === undefined ? [] : [doneCommand(idem.key, idem.hash, status, text, d.idempotencyTtlSeconds ?? 86400)];

    const result = applyMappings(mappings, json, receivedAt, d.connectorId);
    if (E.isRight(result)) {
      d.metrics.mappingOutcomes.inc({ topic, outcome: 'succeeded' }, result.right.length);
      // CONTRACT 6.5: Redis does not roll a MULTI back, so an XADD must not be able to fail inside
      // it (its SETs would stay): process:updates is a stream, or absent, or nothing is written
      const streamType = await writer.type(UPDATES_STREAM).catch((err: Error) => err);
      if (streamType instanceof Error) {
        const f: WriteFailure = { error: streamType.message, unknown: false };
        await release(f);
        return unavailable(topic, f, 'checking process:updates failed; nothing was written');
      }
      if (streamType !== 'stream' && streamType !== 'none') {
        await release({ error: '', unknown: false });
        d.metrics.inboundWrites.inc({ outcome: 'failed' });
        d.log.error({ topic, type: streamType }, 'process:updates is not a stream; nothing was written');
        sendProblem(res, 503, `${UPDATES_STREAM} is not a stream (it is a ${streamType}); nothing was written`);
        return;
      }
      const answer = JSON.stringify(okBody(topic, result.right));
      const written = await execAtomically(writer, [...writeCommands(result.right, d.connectorId, d.streamMaxLength), ...stored(200, answer)]);
      if (E.isLeft(written)) {
        await release(written.left);
        return unavailable(topic, written.left, 'writing the data points failed; nothing was written');
      }
      d.outOfMemory?.written();
      const confirmed = await confirm();
      if (E.isLeft(confirmed)) return unavailable(topic, confirmed.left, 'the write was not confirmed by enough replicas');
      d.metrics.inboundWrites.inc({ outcome: 'written' });
      sendJsonText(res, 200, answer);
      return;
    }
    const failures = result.left;
    d.metrics.mappingOutcomes.inc({ topic, outcome: 'failed' }, failures.failed.length);
    if (failures.succeeded.length > 0) d.metrics.mappingOutcomes.inc({ topic, outcome: 'succeeded' }, failures.succeeded.length);
    const answer = JSON.stringify(failureBody(topic, failures));
    const recorded = await execAtomically(writer, [...errorCommands(d.connectorId, topic, failures), ...stored(422, answer)]);
    if (E.isLeft(recorded)) {
      await release(recorded.left);
      return unavailable(topic, recorded.left, 'recording the mapping errors failed');
    }
    d.outOfMemory?.written();
    d.metrics.inboundWrites.inc({ outcome: 'rejected' });
    // at most 20 failures in the line, and their count (a topic may have thousands of mappings)
    d.log.warn(
      { topic, failedCount: failures.failed.length, failed: failures.failed.slice(0, 20).map((f) => ({ signalId: f.mapping.name, error: f.error })) },
      'mappings failed; nothing written',
    );
    sendJsonText(res, 422, answer);
  } },
];

/**
 * Takes an idempotency key for this request ('taken'), or tells what is stored under it. A key
 * that expired between the two reads is tried once more.
 */
const takeKey = async (redis: Redis, key: string, hash: string, lockMs: number): Promise<E.Either<WriteFailure, 'taken' | Verdict>> => {
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
    return E.left(failure((err as Error).message, false));
  }
};
