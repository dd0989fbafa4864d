import * as E from 'fp-ts/Either';
import { parseJsonBody } from '../mapping/writtenNumbers';
import type { DataRoute } from './app';
import type { Redis } from 'ioredis';
import { applyMappings } from '../mapping/apply';
import { errorCommands, writeCommands, type Command } from '../mapping/commands';
import { failureBody, okBody } from '../mapping/responses';
import { UPDATES_STREAM, type Mapping } from '../mapping/types';
import type { Logger } from '../runtime/logger';
import { isJsonMediaType, readBody, type BodyBudget } from './body';
import { MAX_QUERY_PARAMETERS, parseRawQuery } from './query';
import type { Metrics } from './metrics';
import { problem, jsonError, type OpenApiPart } from './openapi';
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
}

/** Why a transaction did not answer 200: it was not applied, or nobody can tell (CONTRACT 5.1). */
export interface WriteFailure {
  readonly error: string;
  /** The request went out and no answer came back (connection lost, command timeout): it may have been applied. */
  readonly unknown: boolean;
}

const OUTCOME_UNKNOWN = /timed out|Connection is closed|ECONNRESET|EPIPE|socket hang up/i;

/** Runs commands in one MULTI/EXEC; Left when EXEC failed or any command in it did. */
export const execAtomically = async (redis: Redis, commands: readonly Command[]): Promise<E.Either<WriteFailure, void>> => {
  try {
    const replies = await redis.multi(commands as unknown as string[][]).exec();
    if (replies === null) return E.left({ error: 'transaction aborted', unknown: false });
    const failed = replies.find(([err]) => err !== null);
    return failed === undefined ? E.right(undefined) : E.left({ error: String(failed[0]), unknown: false });
  } catch (err) {
    const error = (err as Error).message;
    return E.left({ error, unknown: OUTCOME_UNKNOWN.test(error) });
  }
};

export const OUTCOME_UNKNOWN_DETAIL = 'the data store did not answer the write: its outcome is unknown (it may have been applied)';

/** CONTRACT 5.1: every check of the table, in its order, then the all-or-nothing write. */
export const inboundRoutes = (d: InboundDeps): DataRoute[] => [
  { method: 'post', path: '/api/datapoints', handler: async (req, res) => {
    const unavailable = (topic: string, f: WriteFailure, msg: string): void => {
      d.metrics.inboundWrites.inc({ outcome: 'failed' });
      d.log.error({ topic, err: f.error, outcomeUnknown: f.unknown || undefined }, f.unknown ? 'the data store did not answer; the outcome of the write is unknown' : msg);
      sendProblem(res, 503, f.unknown ? OUTCOME_UNKNOWN_DETAIL : NOT_CONNECTED);
    };
    const receivedAt = d.now().toISOString();
    // every parameter of the raw query counts (CONTRACT 6.5): a second topic anywhere is refused
    const query = parseRawQuery(req.originalUrl);
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
    const body = await readBody(req, d.maxBodyBytes, d.bodyBudget);
    if (!body.ok) {
      if (body.reason === 'busy') {
        res.set('Connection', 'close');
        sendProblem(res, 503, 'too many request bodies are being received at once; try again shortly', { 'Retry-After': '1' });
        return;
      }
      if (body.reason === 'too_large') {
        // The rest of the body is not read: close the connection after answering.
        res.set('Connection', 'close');
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
    if (!d.isConnected()) {
      sendProblem(res, 503, NOT_CONNECTED);
      return;
    }
    const result = applyMappings(mappings, json, receivedAt, d.connectorId);
    if (E.isRight(result)) {
      d.metrics.mappingOutcomes.inc({ topic, outcome: 'succeeded' }, result.right.length);
      // CONTRACT 6.5: Redis does not roll a MULTI back, so an XADD must not be able to fail inside
      // it (its SETs would stay): process:updates is a stream, or absent, or nothing is written
      const streamType = await d.redis.type(UPDATES_STREAM).catch((err: Error) => err);
      if (streamType instanceof Error) return unavailable(topic, { error: streamType.message, unknown: false }, 'checking process:updates failed; nothing was written');
      if (streamType !== 'stream' && streamType !== 'none') {
        d.metrics.inboundWrites.inc({ outcome: 'failed' });
        d.log.error({ topic, type: streamType }, 'process:updates is not a stream; nothing was written');
        sendProblem(res, 503, `${UPDATES_STREAM} is not a stream (it is a ${streamType}); nothing was written`);
        return;
      }
      const written = await execAtomically(d.redis, writeCommands(result.right, d.connectorId, d.streamMaxLength));
      if (E.isLeft(written)) return unavailable(topic, written.left, 'writing the data points failed; nothing was written');
      d.metrics.inboundWrites.inc({ outcome: 'written' });
      sendJsonText(res, 200, JSON.stringify(okBody(topic, result.right)));
      return;
    }
    const failures = result.left;
    d.metrics.mappingOutcomes.inc({ topic, outcome: 'failed' }, failures.failed.length);
    if (failures.succeeded.length > 0) d.metrics.mappingOutcomes.inc({ topic, outcome: 'succeeded' }, failures.succeeded.length);
    const recorded = await execAtomically(d.redis, errorCommands(d.connectorId, topic, failures));
    if (E.isLeft(recorded)) return unavailable(topic, recorded.left, 'recording the mapping errors failed');
    d.metrics.inboundWrites.inc({ outcome: 'rejected' });
    // at most 20 failures in the line, and their count (a topic may have thousands of mappings)
    d.log.warn(
      { topic, failedCount: failures.failed.length, failed: failures.failed.slice(0, 20).map((f) => ({ signalId: f.mapping.name, error: f.error })) },
      'mappings failed; nothing written',
    );
    sendJsonText(res, 422, JSON.stringify(failureBody(topic, failures)));
  } },
];

export const inboundOpenApi: OpenApiPart = {
  paths: {
    '/api/datapoints': {
      post: {
        operationId: 'postDataPoints',
        summary: "Apply the topic's mappings to a JSON object and write the data points, all or nothing",
        parameters: [{ name: 'topic', in: 'query', required: true, schema: { type: 'string', minLength: 1 }, description: 'the mapping group applied to the payload' }],
        requestBody: {
          required: true,
          description: 'any JSON object; the topic\'s mappings read their values from it by path',
          content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
        },
        responses: {
          '200': { description: 'every mapping succeeded and the data points were written', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundSuccess' } } } },
          '400': jsonError('missing_topic, invalid_json or invalid_body'),
          '401': problem('API keys are configured and none valid was given'),
          '404': jsonError("unknown_topic: No mappings are configured for topic 'T'"),
          '413': jsonError('payload_too_large'),
          '415': jsonError('unsupported_media_type'),
          '422': { description: 'one or more mappings failed; nothing was written', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundFailure' } } } },
          '503': problem('connector inactive, or data store not connected'),
        },
      },
    },
  },
  schemas: {
    InboundSuccess: {
      type: 'object', required: ['topic', 'succeeded'],
      properties: { topic: { type: 'string' }, succeeded: { type: 'array', items: { type: 'string' } } },
    },
    InboundFailure: {
      type: 'object', required: ['topic', 'message', 'failed', 'succeeded'],
      properties: {
        topic: { type: 'string' },
        message: { type: 'string', examples: ['1 of 3 mappings failed'] },
        failed: { type: 'array', items: { type: 'object', required: ['signalId', 'error'], properties: { signalId: { type: 'string' }, error: { type: 'string' } } } },
        succeeded: { type: 'array', items: { type: 'object', required: ['signalId'], properties: { signalId: { type: 'string' } } } },
      },
    },
  },
};
