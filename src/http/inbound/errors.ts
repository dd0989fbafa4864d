import type { StoreFailure } from './store';
import { NOT_CONNECTED } from '../app/problem';

/**
 * Every way a `POST /api/datapoints` ends without writing (CONTRACT 5.1, 5.1.1, 6.5, 6.6), as one
 * closed union, and one function from it to the answer. A store failure carries the step it came
 * from, which only the log line tells apart.
 */
export type WriteStep = 'idempotency_key' | 'stream_check' | 'write' | 'errors' | 'confirm' | 'replay_confirm';

export type InboundError =
  | { readonly tag: 'missing_topic' }
  /** CONTRACT 7.2: `callers` is set and this caller may not write this topic. */
  | { readonly tag: 'forbidden_topic'; readonly caller: string; readonly topic: string }
  | { readonly tag: 'unsupported_media_type' }
  | { readonly tag: 'unsupported_encoding' }
  | { readonly tag: 'payload_too_large'; readonly maxBytes: number }
  | { readonly tag: 'bodies_busy' }
  /** The client went away before its body was read: nothing to answer. */
  | { readonly tag: 'body_aborted' }
  | { readonly tag: 'invalid_json'; readonly message: string }
  | { readonly tag: 'invalid_body'; readonly message: string }
  | { readonly tag: 'unknown_topic'; readonly topic: string }
  | { readonly tag: 'invalid_idempotency_key' }
  | { readonly tag: 'idempotency_key_reused' }
  | { readonly tag: 'idempotency_key_in_progress' }
  | { readonly tag: 'store'; readonly step: WriteStep; readonly topic: string; readonly failure: StoreFailure };

/** An answer as the route sends it: `{"code","message"}` (json), RFC 9457 problem details, or nothing. */
export type Answer =
  | { readonly kind: 'error'; readonly status: number; readonly code: string; readonly message: string; readonly close?: boolean }
  | { readonly kind: 'problem'; readonly status: number; readonly detail: string; readonly headers?: Readonly<Record<string, string>>; readonly close?: boolean }
  | { readonly kind: 'none' };

export const READ_ONLY_DETAIL = 'the data store node is a replica (a failover is under way); nothing was written';
export const OUT_OF_MEMORY_DETAIL = 'the data store is out of memory (it refuses writes); nothing was written';
export const OUTCOME_UNKNOWN_DETAIL = 'the data store did not answer the write: its outcome is unknown (it may have been applied)';
/** CONTRACT 6.6: how long a client should wait before it retries a write refused for want of memory. */
export const OUT_OF_MEMORY_RETRY_AFTER = '5';
const unconfirmedDetail = (n: number, acked: number) =>
  `the write was applied on the master but not confirmed by ${n} replica${n === 1 ? '' : 's'} (${acked} confirmed in time); retry with the same Idempotency-Key to avoid writing twice`;

/** CONTRACT 7.2: the 403's detail for a topic the caller may not write. */
export const forbiddenTopicDetail = (caller: string, topic: string): string => `caller '${caller}' may not write topic '${topic}'`;

const storeAnswer = (f: StoreFailure): Answer => {
  switch (f.tag) {
    case 'not_connected':
      return { kind: 'problem', status: 503, detail: NOT_CONNECTED };
    case 'aborted':
      return { kind: 'problem', status: 503, detail: `the data store did not take the write (${f.error}); nothing was written` };
    case 'read_only':
      return { kind: 'problem', status: 503, detail: READ_ONLY_DETAIL };
    case 'out_of_memory':
      return { kind: 'problem', status: 503, detail: OUT_OF_MEMORY_DETAIL, headers: { 'Retry-After': OUT_OF_MEMORY_RETRY_AFTER } };
    case 'unknown_outcome':
      return { kind: 'problem', status: 503, detail: OUTCOME_UNKNOWN_DETAIL };
    case 'unconfirmed':
      return { kind: 'problem', status: 503, detail: unconfirmedDetail(f.replicas, f.acked) };
    case 'not_a_stream':
      return { kind: 'problem', status: 503, detail: `process:updates is not a stream (it is a ${f.type}); nothing was written` };
  }
};

/** The one function from a request's failure to its status and body. */
export const answerOf = (e: InboundError): Answer => {
  switch (e.tag) {
    case 'missing_topic':
      return { kind: 'error', status: 400, code: 'missing_topic', message: "query parameter 'topic' is required, once, and must not be empty (at most 1000 parameters)" };
    case 'forbidden_topic':
      return { kind: 'problem', status: 403, detail: forbiddenTopicDetail(e.caller, e.topic) };
    case 'unsupported_media_type':
      return { kind: 'error', status: 415, code: 'unsupported_media_type', message: 'the content type must be application/json' };
    case 'unsupported_encoding':
      // CONTRACT 6.5: a compressed body would otherwise be read as JSON text
      return { kind: 'error', status: 415, code: 'unsupported_media_type', message: 'the content encoding must be identity (no compression)' };
    case 'payload_too_large':
      // the rest of the body is not read: the connection closes after the answer
      return { kind: 'error', status: 413, code: 'payload_too_large', message: `the body exceeds ${e.maxBytes} bytes`, close: true };
    case 'bodies_busy':
      return { kind: 'problem', status: 503, detail: 'too many request bodies are being received at once; try again shortly', headers: { 'Retry-After': '1' }, close: true };
    case 'body_aborted':
      return { kind: 'none' };
    case 'invalid_json':
      return { kind: 'error', status: 400, code: 'invalid_json', message: `the body is not valid JSON: ${e.message}` };
    case 'invalid_body':
      return { kind: 'error', status: 400, code: 'invalid_body', message: e.message };
    case 'unknown_topic':
      return { kind: 'error', status: 404, code: 'unknown_topic', message: `No mappings are configured for topic '${e.topic}'` };
    case 'invalid_idempotency_key':
      return { kind: 'error', status: 400, code: 'invalid_idempotency_key', message: 'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces' };
    case 'idempotency_key_reused':
      return { kind: 'error', status: 422, code: 'idempotency_key_reused', message: 'this Idempotency-Key was used for another topic or body' };
    case 'idempotency_key_in_progress':
      return { kind: 'error', status: 409, code: 'idempotency_key_in_progress', message: 'a request with this Idempotency-Key is being processed; retry shortly' };
    case 'store':
      return storeAnswer(e.failure);
  }
};

const STEP_MESSAGE: Record<WriteStep, string> = {
  idempotency_key: 'taking the idempotency key failed; nothing was written',
  stream_check: 'checking process:updates failed; nothing was written',
  write: 'writing the data points failed; nothing was written',
  errors: 'recording the mapping errors failed',
  confirm: 'the write was not confirmed by enough replicas',
  replay_confirm: 'the replayed write was not confirmed by enough replicas',
};

/**
 * The log line (an error) and the `inbound_requests_total` outcome of a store failure; neither
 * when the connection was not there to begin with (nothing was tried).
 */
export const storeFailureLog = (
  step: WriteStep, f: StoreFailure,
): { readonly outcome?: 'failed' | 'unconfirmed'; readonly line?: { readonly fields: Record<string, unknown>; readonly msg: string } } => {
  switch (f.tag) {
    case 'not_connected':
      return {};
    case 'not_a_stream':
      return { outcome: 'failed', line: { fields: { type: f.type }, msg: 'process:updates is not a stream; nothing was written' } };
    case 'unknown_outcome':
      return { outcome: 'failed', line: { fields: { err: f.error, outcomeUnknown: true }, msg: 'the data store did not answer; the outcome of the write is unknown' } };
    case 'unconfirmed':
      return { outcome: 'unconfirmed', line: { fields: { err: f.error }, msg: 'the write was not confirmed by enough replicas' } };
    case 'out_of_memory':
      return { outcome: 'failed', line: { fields: { err: f.error, outOfMemory: true }, msg: STEP_MESSAGE[step] } };
    case 'read_only':
    case 'aborted':
      return { outcome: 'failed', line: { fields: { err: f.error }, msg: STEP_MESSAGE[step] } };
  }
};
