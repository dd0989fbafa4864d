import * as E from 'fp-ts/Either';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { applyToPayload } from '../../mapping/apply';
import { errorCommands, writePlan, type Command, type Write } from '../../mapping/commands';
import { callerIdempotencyKey, idempotencyKey } from '../../mapping/keys';
import { mayWrite, type CallerGrant } from '../../config/callerSettings';
import { failureBody, okBody } from '../../mapping/responses';
import { itemCount, payloadOf, type Payload } from '../../mapping/payload';
import type { Mapping } from '../../mapping/types';
import { parseJsonBody } from '../../mapping/writtenNumbers';
import type { DataRoute, RequestContext } from '../app/app';
import { isJsonMediaType, readBody, type BodyBudget } from './bodyBudget';
import { doneCommand, requestHash, validIdempotencyKey } from './idempotency';
import { answerOf, forbiddenTopicDetail, storeFailureLog, type InboundError, type WriteStep } from './errors';
import type { InboundStore, KeyHeld, StoreFailure, StoreSession } from './store';
import type { Metrics } from '../../telemetry/metrics';
import { sendError, sendJsonText, sendProblem } from '../app/problem';
import type { RequestTrace, WriteTrace } from '../../telemetry/tracing';
import { MAX_QUERY_PARAMETERS, parseRawQuery } from '../app/query';

export interface InboundDeps {
  readonly connectorId: string;
  readonly topics: ReadonlyMap<string, readonly Mapping[]>;
  readonly maxBodyBytes: number;
  /** CONTRACT 5.5: the most objects an array body may hold (`Http:MaxBatchItems`). */
  readonly maxBatchItems: number;
  /** Shared by every request of the connector (`Http:MaxBodyBytesInFlight`). */
  readonly bodyBudget?: BodyBudget;
  readonly streamMaxLength: number;
  /** Where the writes go (`redisInboundStore`): the idempotency key, the stream check, the MULTI, WAIT. */
  readonly store: InboundStore;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly idempotencyTtlSeconds?: number;
  /** How long a first request's "pending" marker holds its key (it expires if the process dies). */
  readonly idempotencyLockMs?: number;
  /** CONTRACT 6.6: told of every write refused with OOM, and of every write that succeeded (readiness). */
  readonly outOfMemory?: { refused(write: string, error: string): void; written(): void };
}

/** A request that got past the checks of the table: its topic, mappings, body and idempotency key. */
interface Decoded {
  readonly topic: string;
  readonly mappings: readonly Mapping[];
  /** One object, or an array of them (CONTRACT 5.5). */
  readonly payload: Payload;
  /** The key and the hash of topic and body, when the request carries an `Idempotency-Key`. */
  readonly idem?: { readonly key: string; readonly hash: string };
}

/**
 * CONTRACT 5.1, 6.5 and 7.2, before the body: topic once (and at most 1000 parameters), one the
 * caller may write (when `callers` is set: `who` is the caller and its grant), JSON, no compression. Pure.
 */
export const decodeHead = (
  url: string, headers: IncomingMessage['headers'], who?: { readonly caller: string; readonly grant: CallerGrant },
): E.Either<InboundError, string> => {
  // every parameter of the raw query counts (CONTRACT 6.5): a second topic anywhere is refused
  const query = parseRawQuery(url);
  const topics = query.values('topic');
  const topic = topics[0];
  if (topics.length !== 1 || topic === undefined || topic === '' || query.count > MAX_QUERY_PARAMETERS) return E.left({ tag: 'missing_topic' });
  if (who !== undefined && !mayWrite(who.grant, topic)) return E.left({ tag: 'forbidden_topic', caller: who.caller, topic });
  if (!isJsonMediaType(headers['content-type'])) return E.left({ tag: 'unsupported_media_type' });
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') return E.left({ tag: 'unsupported_encoding' });
  return E.right(topic);
};

/** The rest of the table, once the body is read: JSON, an object or an array of them, a known topic, a valid key. Pure. */
export const decodeRest = (
  d: Pick<InboundDeps, 'connectorId' | 'topics' | 'maxBatchItems'>, topic: string, body: { text: string; bytes: Buffer }, keyHeader: string | string[] | undefined,
  /** CONTRACT 7.2: with `callers` set, the caller whose idempotency keys these are. */
  keyOwner?: string,
): E.Either<InboundError, Decoded> => {
  let json: unknown;
  try {
    json = parseJsonBody(body.text);
  } catch (err) {
    return E.left({ tag: 'invalid_json', message: (err as Error).message });
  }
  const payload = payloadOf(json, d.maxBatchItems);
  if (E.isLeft(payload)) return E.left({ tag: 'invalid_body', message: payload.left });
  const mappings = d.topics.get(topic);
  if (mappings === undefined) return E.left({ tag: 'unknown_topic', topic });
  if (keyHeader === undefined) return E.right({ topic, mappings, payload: payload.right });
  if (!validIdempotencyKey(keyHeader)) return E.left({ tag: 'invalid_idempotency_key' });
  const key = keyOwner === undefined ? idempotencyKey(d.connectorId, keyHeader) : callerIdempotencyKey(d.connectorId, keyOwner, keyHeader);
  return E.right({ topic, mappings, payload: payload.right, idem: { key, hash: requestHash(topic, body.bytes) } });
};

type Written = {
  readonly status: 200 | 422;
  readonly body: string;
  readonly replayed?: true;
  /** A 422's log line: the topic, how many failed, the first 20 (a topic may have thousands of mappings). */
  readonly rejected?: { readonly topic: string; readonly failedCount: number; readonly failed: ReadonlyArray<{ signalId: string; error: string; item?: number }> };
};

/**
 * CONTRACT 5.1: every check of the table, in its order, then the all-or-nothing write:
 * decode (pure) → apply the mappings → plan the writes → store → answer.
 */
export const inboundRoutes = (d: InboundDeps): DataRoute[] => [
  { method: 'post', path: '/api/datapoints', handler: async (req, res, ctx) => {
    const outcome = await handle(d, req, res, ctx);
    if (E.isRight(outcome)) answered(d, res, outcome.right);
    else if (outcome.left.tag === 'forbidden_topic') ctx.forbid(forbiddenTopicDetail(outcome.left.caller, outcome.left.topic));
    else failed(d, res, outcome.left);
  } },
];

const handle = async (d: InboundDeps, req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<E.Either<InboundError, Written>> => {
  // CONTRACT 7.2: with callers set, the grant decides the topic and the idempotency keys' owner
  const who = ctx.grant !== undefined && ctx.caller !== undefined ? { caller: ctx.caller, grant: ctx.grant } : undefined;
  const topic = decodeHead(req.url ?? '', req.headers, who);
  if (E.isLeft(topic)) return topic;
  const body = await readBody(req, res, d.maxBodyBytes, d.bodyBudget);
  if (!body.ok) return E.left(body.reason === 'busy' ? { tag: 'bodies_busy' } : body.reason === 'too_large' ? { tag: 'payload_too_large', maxBytes: d.maxBodyBytes } : { tag: 'body_aborted' });
  const decoded = decodeRest(d, topic.right, body, req.headers['idempotency-key'], who?.caller);
  if (E.isLeft(decoded)) return decoded;
  const r = decoded.right;
  const opened = await d.store.session();
  if (E.isLeft(opened)) return E.left({ tag: 'store', step: 'write', topic: r.topic, failure: opened.left });
  const store = opened.right;
  // CONTRACT 5.1.1: a key already taken answers from what is stored under it, and writes nothing
  if (r.idem !== undefined) {
    const taken = await store.takeKey(r.idem.key, r.idem.hash, d.idempotencyLockMs ?? 10000);
    if (E.isLeft(taken)) return E.left({ tag: 'store', step: 'idempotency_key', topic: r.topic, failure: taken.left });
    const v = taken.right;
    if (v !== 'taken') return verdictAnswer(v, r.topic, store);
  }
  const plan = planWrites(d, r, ctx.receivedAt.toISOString(), ctx.trace);
  const written = await write(store, plan);
  plan.producer?.end(E.isLeft(written) ? written.left[1].tag : undefined);
  if (E.isLeft(written)) return giveBack(store, r, written.left[0], written.left[1]);
  d.outOfMemory?.written();
  if (plan.status === 200) {
    const confirmed = await store.confirm();
    if (E.isLeft(confirmed)) return E.left({ tag: 'store', step: 'confirm', topic: r.topic, failure: confirmed.left });
  }
  return E.right({ status: plan.status, body: plan.answer, ...(plan.rejected !== undefined ? { rejected: plan.rejected } : {}) });
};

/** The stream check (when points are written) and the one MULTI; Left with the step that failed. */
const write = async (store: StoreSession, plan: Plan): Promise<E.Either<readonly [WriteStep, StoreFailure], void>> => {
  if (plan.points > 0) {
    const checked = await store.checkStream();
    if (E.isLeft(checked)) return E.left(['stream_check', checked.left]);
  }
  const written = await store.exec(plan.commands);
  return E.isLeft(written) ? E.left([plan.status === 200 ? 'write' : 'errors', written.left]) : E.right(undefined);
};

/** What a key already taken gets: 422 reused, 409 in progress, or the stored answer (a stored 200 confirmed again). */
const verdictAnswer = async (v: KeyHeld, topic: string, store: StoreSession): Promise<E.Either<InboundError, Written>> => {
  if (v.kind === 'reused') return E.left({ tag: 'idempotency_key_reused' });
  if (v.kind === 'in_progress') return E.left({ tag: 'idempotency_key_in_progress' });
  // the first request may have got a WaitReplicas 503
  const confirmed = v.status === 200 ? await store.confirm() : E.right(undefined);
  if (E.isLeft(confirmed)) return E.left({ tag: 'store', step: 'replay_confirm', topic, failure: confirmed.left });
  return E.right({ status: v.status as 200 | 422, body: v.body, replayed: true });
};

/** A failure before anything was written gives the key back, so that a retry can write (not when the outcome is unknown). */
const giveBack = async (store: StoreSession, r: Decoded, step: WriteStep, failure: StoreFailure): Promise<E.Either<InboundError, Written>> => {
  if (r.idem !== undefined && failure.tag !== 'unknown_outcome') await store.releaseKey(r.idem.key);
  return E.left({ tag: 'store', step, topic: r.topic, failure });
};

/**
 * The mappings applied (every one, CONTRACT 5.2–5.4) and what to write: the points and their
 * stream entries (200), or the error entries (422); with the answer stored under the key.
 */
interface Plan {
  readonly status: 200 | 422;
  readonly points: number;
  readonly answer: string;
  readonly rejected: Written['rejected'];
  readonly commands: readonly Write[];
  /** The write's producer span (CONTRACT 9), when tracing is on and points are written. */
  readonly producer?: WriteTrace | undefined;
}

const planWrites = (d: InboundDeps, r: Decoded, receivedAt: string, trace: RequestTrace | undefined): Plan => {
  const result = applyToPayload(r.mappings, r.payload, receivedAt, d.connectorId);
  const items = itemCount(r.payload);
  const stored = (status: number, text: string): Command[] =>
    r.idem === undefined ? [] : [doneCommand(r.idem.key, r.idem.hash, status, text, d.idempotencyTtlSeconds ?? 86400)];
  if (E.isRight(result)) {
    d.metrics.mappingOutcomes.inc({ topic: r.topic, outcome: 'succeeded' }, result.right.length);
    const answer = JSON.stringify(okBody(r.topic, result.right, items));
    // CONTRACT 9: the producer span's context goes into every entry of the write
    const producer = trace !== undefined && result.right.length > 0 ? trace.producer(result.right.length) : undefined;
    const commands = [...writePlan(result.right, d.connectorId, d.streamMaxLength, producer?.traceparent), ...stored(200, answer)];
    return { status: 200, points: result.right.length, answer, rejected: undefined, commands, producer };
  }
  const failures = result.left;
  d.metrics.mappingOutcomes.inc({ topic: r.topic, outcome: 'failed' }, failures.failed.length);
  // every mapping applied to every item: what did not fail succeeded (for one object, the mappings that succeeded)
  const applied = (items ?? 1) * r.mappings.length - failures.failed.length;
  if (applied > 0) d.metrics.mappingOutcomes.inc({ topic: r.topic, outcome: 'succeeded' }, applied);
  const rejected = {
    topic: r.topic, failedCount: failures.failed.length,
    failed: failures.failed.slice(0, 20).map((f) => ({ signalId: f.mapping.name, error: f.error, ...(f.item !== undefined ? { item: f.item } : {}) })),
  };
  const answer = JSON.stringify(failureBody(r.topic, failures, items));
  return { status: 422, points: 0, answer, rejected, commands: [...errorCommands(d.connectorId, r.topic, failures), ...stored(422, answer)] };
};

const answered = (d: InboundDeps, res: ServerResponse, w: Written): void => {
  if (w.replayed) {
    d.metrics.inboundWrites.inc({ outcome: 'replayed' });
    res.setHeader('Idempotent-Replayed', 'true');
  } else if (w.status === 200) d.metrics.inboundWrites.inc({ outcome: 'written' });
  else {
    d.metrics.inboundWrites.inc({ outcome: 'rejected' });
    d.log.warn(w.rejected, 'mappings failed; nothing written');
  }
  sendJsonText(res, w.status, w.body);
};

const failed = (d: InboundDeps, res: ServerResponse, e: InboundError): void => {
  if (e.tag === 'store') {
    const { outcome, line } = storeFailureLog(e.step, e.failure);
    if (outcome !== undefined) d.metrics.inboundWrites.inc({ outcome });
    if (e.failure.tag === 'out_of_memory') d.outOfMemory?.refused('request', e.failure.error);
    if (line !== undefined) d.log.error({ topic: e.topic, ...line.fields }, line.msg);
  }
  const a = answerOf(e);
  if (a.kind === 'none') return;
  if (a.close === true) res.setHeader('Connection', 'close');
  if (a.kind === 'error') sendError(res, a.status, a.code, a.message);
  else sendProblem(res, a.status, a.detail, a.headers);
};
