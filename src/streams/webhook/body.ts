import * as E from 'fp-ts/Either';
import { influxPrecision } from '../../config/formatSettings';
import { addBodyTime, timedBody } from '../../telemetry/bodyTime';
import type { Webhook } from '../../config/webhookSettings';
import type { Batch, Cause, Content } from '../read/batches';
import { bodyFormatOf, DEFAULT_MAX_BODY_BYTES, influxLines, LINE_CONTENT_TYPE, ndjsonBytes, NDJSON_CONTENT_TYPE, type BodyFormat } from './formats';
import { tooLong } from './jsonataEval';

/**
 * A webhook's request body (CONTRACT 4.2, 4.6, 4.7): the one place that makes one from a batch, and
 * the one that reads one back. `prepareBody` renders a batch in a webhook's format (once per batch
 * and format: webhooks of one format share it); the lane hands the batch on carrying that body
 * (`withBody`), and every request — a live batch and its retries, a filtered part, a redriven or
 * replayed backlog entry, an interrogation's request on its thread, a resend — sends
 * `requestBody(batch)`, which is the body the batch carries, or its default body. The backlog
 * stores that same body: nothing can pick another, and every retry sends the same bytes (the
 * signature is over them).
 */
export interface Body {
  /** What is sent (and signed): the body's UTF-8 bytes. */
  readonly bytes: Buffer;
  readonly contentType: string;
}

export type { BodyFormat } from './formats';

export const DATAPOINTS: BodyFormat = { type: 'datapoints', maxBodyBytes: DEFAULT_MAX_BODY_BYTES };
const NDJSON: BodyFormat = { type: 'ndjson', maxBodyBytes: DEFAULT_MAX_BODY_BYTES };

export const JSON_CONTENT_TYPE = 'application/json';

/** Formats made, by what makes them different: webhooks with the same one share each batch's rendering. */
const formats = new Map<string, BodyFormat>();
/**
 * The webhook's format (CONTRACT 4.7): one object for every webhook whose format renders the same
 * bytes (the same type, measurement and precision, or the same expression and output), so that
 * they share each batch's rendering; a JSONata expression given one evaluation process. `maxBodyBytes`:
 * `Webhooks:MaxBodyBytes` (CONTRACT 4.7 "Size").
 */
export const formatOf = (w: Webhook, maxBodyBytes = DEFAULT_MAX_BODY_BYTES): BodyFormat => {
  const f = w.format ?? { type: 'datapoints' as const };
  // Stryker disable next-line ConditionalExpression,StringLiteral: shortcuts: the keyed map below gives every such webhook one object as well
  if (maxBodyBytes === DEFAULT_MAX_BODY_BYTES && (f.type === 'datapoints' || f.type === 'ndjson')) return f.type === 'datapoints' ? DATAPOINTS : NDJSON;
  // Stryker disable next-line StringLiteral: only line protocol reads the unit
  const precision = f.type === 'influx-line' ? influxPrecision(w.url, f, 'webhook') : E.right('ns' as const);
  // the configuration's decoding has refused a webhook whose precisions disagree
  // Stryker disable next-line StringLiteral: unreachable (see above)
  const unit = E.isRight(precision) ? precision.right : 'ns';
  // Stryker disable next-line EqualityOperator: any consistent order of the (distinct) setting names makes the same key
  const key = JSON.stringify([f.type, unit, maxBodyBytes, ...Object.entries(f).sort(([a], [b]) => (a < b ? -1 : 1))]);
  let made = formats.get(key);
  if (made === undefined) {
    // configurations changed many times over do not pile up compiled expressions. Clearing it only
    // costs sharing: no request needs the object its lane holds (the lane hands on the body it
    // rendered, `withBody`), so any number of formats works
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the cache's bound on memory
    if (formats.size >= 256) formats.clear();
    formats.set(key, (made = bodyFormatOf(f, unit, maxBodyBytes)));
  }
  return made;
};

const START = '{"datapoints":[';
const START_BYTES = Buffer.from(START);
const COMMA = 0x2c;
const ENDS: Readonly<Record<Cause | 'live', string>> = {
  live: ']}', interrogation: '],"cause":"interrogation"}', periodic: '],"cause":"periodic"}', resend: '],"cause":"resend"}',
};
const END_BYTES: Readonly<Record<Cause | 'live', Buffer>> = {
  live: Buffer.from(ENDS.live), interrogation: Buffer.from(ENDS.interrogation), periodic: Buffer.from(ENDS.periodic), resend: Buffer.from(ENDS.resend),
};

/**
 * `{"datapoints":[…]}` of points given as bytes: copied once into one buffer of `alloc`'s (the
 * interrogation thread's reused memory, `src/runtime/interrogation/bodyPool.ts`), never made a string.
 */
const datapointsOfBytes = (points: readonly Uint8Array[], cause: Cause | undefined, alloc: (length: number) => Buffer): Buffer => {
  const end = END_BYTES[cause ?? 'live'];
  let length = START_BYTES.length + end.length + Math.max(0, points.length - 1);
  for (const v of points) length += v.length;
  const body = alloc(length);
  let at = START_BYTES.copy(body, 0);
  for (let i = 0; i < points.length; i++) {
    if (i > 0) body[at++] = COMMA;
    body.set(points[i]!, at);
    at += points[i]!.length;
  }
  END_BYTES[cause ?? 'live'].copy(body, at);
  return body;
};

/** The default body, as text. */
const datapointsText = (content: Content, cause: Cause | undefined): string => {
  switch (content.kind) {
    case 'text': return `${START}${content.points}${ENDS[cause ?? 'live']}`;
    case 'bytes': return `${START}${content.points.map((p) => Buffer.from(p).toString('utf8')).join(',')}${ENDS[cause ?? 'live']}`;
    // Stryker disable next-line all: unreachable (prepare sends a stored body as it is and never renders one of elsewhere); a guard for the types
    default: throw new Error(`a ${content.kind} body has no points to render`);
  }
};

const renderDatapoints = (content: Content, cause: Cause | undefined, alloc: (length: number) => Buffer): Body => {
  switch (content.kind) {
    case 'text':
      // Stryker disable next-line StringLiteral: 'utf8' is Buffer.from's default
      return { bytes: Buffer.from(`${START}${content.points}${ENDS[cause ?? 'live']}`, 'utf8'), contentType: JSON_CONTENT_TYPE };
    case 'bytes':
      return { bytes: datapointsOfBytes(content.points, cause, alloc), contentType: JSON_CONTENT_TYPE };
    case 'stored':
      // Stryker disable next-line StringLiteral: 'utf8' is Buffer.from's default
      return { bytes: typeof content.body === 'string' ? Buffer.from(content.body, 'utf8') : content.body, contentType: content.contentType };
    case 'elsewhere':
      throw new Error('this request\'s body is on its interrogation thread: its run\'s sender sends it');
  }
};

/** The points' JSON texts joined by commas (`Content` 'text' holds them so). */
const joinedPoints = (content: Extract<Content, { kind: 'text' | 'bytes' }>): string =>
  content.kind === 'text' ? content.points : content.points.map((p) => Buffer.from(p).toString()).join(',');

/** What a batch comes to for one webhook: a body, nothing to send (every point left out, or JSONata's nothing), or a failure. */
export type Prepared =
  | { readonly kind: 'body'; readonly body: Body; readonly skipped: number }
  | { readonly kind: 'nothing'; readonly skipped: number }
  | { readonly kind: 'failed'; readonly error: string };

const made = (text: string, contentType: string, skipped = 0): Prepared =>
  // Stryker disable next-line StringLiteral: 'utf8' is Buffer.from's default
  text.length === 0 ? { kind: 'nothing', skipped } : { kind: 'body', body: { bytes: Buffer.from(text, 'utf8'), contentType }, skipped };

/** The default body of points (`renderDatapoints`), its time counted; a stored one is only sent again. */
const datapointsOf = (content: Content, cause: Cause | undefined, alloc: (length: number) => Buffer): Body =>
  content.kind === 'stored' ? renderDatapoints(content, cause, alloc) : timedBody('datapoints', () => renderDatapoints(content, cause, alloc));

/**
 * CONTRACT 4.7 "Size": a body rendered longer than the format's `maxBodyBytes` cannot be rendered. A
 * stored body (a backlog entry's) is sent as it is, whatever its size.
 */
const sized = (format: BodyFormat, batch: Batch, p: Prepared): Prepared =>
  p.kind === 'body' && batch.content.kind !== 'stored' && p.body.bytes.length > format.maxBodyBytes ? { kind: 'failed', error: tooLong(p.body.bytes.length) } : p;

/**
 * The length of a text batch's default body when it is longer than `max`, else undefined (CONTRACT
 * 4.7 "Size", known before the body is made). A UTF-8 character takes at most 3 bytes per UTF-16
 * unit, so a batch whose text is short enough is within the limit without counting its bytes: the
 * count (a scan of the whole text) is made only near the limit.
 */
export const defaultBodyOver = (batch: Batch, max: number): number | undefined => {
  if (batch.content.kind !== 'text') return undefined;
  const frame = START.length + ENDS[batch.cause ?? 'live'].length;
  if (frame + 3 * batch.content.points.length <= max) return undefined;
  const n = frame + Buffer.byteLength(batch.content.points, 'utf8');
  return n > max ? n : undefined;
};

const prepare = async (format: BodyFormat, batch: Batch, alloc: (length: number) => Buffer): Promise<Prepared> => sized(format, batch, await prepareAny(format, batch, alloc));

const prepareAny = async (format: BodyFormat, batch: Batch, alloc: (length: number) => Buffer): Promise<Prepared> => {
  const { content } = batch;
  // a stored body (a backlog entry's) goes as stored, whatever the format is now (CONTRACT 4.7)
  if (format.type === 'datapoints' || content.kind === 'stored' || content.kind === 'elsewhere') {
    return { kind: 'body', body: requestBody(batch, alloc), skipped: 0 };
  }
  switch (format.type) {
    case 'ndjson':
      return timedBody('ndjson', () => {
        const bytes = ndjsonBytes(joinedPoints(content));
        return bytes.length === 0 ? { kind: 'nothing', skipped: 0 } : { kind: 'body', body: { bytes, contentType: NDJSON_CONTENT_TYPE }, skipped: 0 };
      });
    case 'influx-line':
      return timedBody('influx-line', () => {
        // the points parsed in one piece: a native parse of the whole list is cheaper than splitting first
        const points = JSON.parse(`[${joinedPoints(content)}]`) as Array<Record<string, unknown>>;
        // an interrogation's points have no stream entry: no time for those without a timestamp
        const { text, skipped } = influxLines(format, points, batch.cause === 'interrogation' || batch.cause === 'periodic' ? undefined : batch.ids);
        return made(text, LINE_CONTENT_TYPE, skipped);
      });
    case 'jsonata': {
      // evaluated in the expression's own process (its limits there), one batch at a time; its time is that process's
      const { result, micros } = await format.evaluator.evaluate(datapointsText(content, batch.cause));
      addBodyTime('jsonata', micros);
      switch (result.kind) {
        case 'body': return { kind: 'body', body: { bytes: result.bytes as Buffer, contentType: format.contentType }, skipped: 0 };
        case 'nothing': return { kind: 'nothing', skipped: 0 };
        case 'failed': return result;
      }
    }
  }
};

/** What each batch came to, by format and batch (a batch goes to every webhook of a format as the same object). */
const rendered = new WeakMap<BodyFormat, WeakMap<Batch, Prepared | Promise<Prepared>>>();

const cache = (format: BodyFormat): WeakMap<Batch, Prepared | Promise<Prepared>> => {
  let byBatch = rendered.get(format);
  if (byBatch === undefined) rendered.set(format, (byBatch = new WeakMap()));
  return byBatch;
};

/**
 * What `batch` comes to for a webhook of `format` (CONTRACT 4.7), rendered once: the same for every
 * retry. A failure to render is a result (`failed`), never an error.
 */
export const prepareBody = (format: BodyFormat, batch: Batch, alloc: (length: number) => Buffer = Buffer.allocUnsafe): Promise<Prepared> => {
  const byBatch = cache(format);
  const known = byBatch.get(batch);
  if (known !== undefined) return Promise.resolve(known);
  const p = prepare(format, batch, alloc).catch((err: unknown): Prepared => ({ kind: 'failed', error: err instanceof Error ? err.message : String(err) }));
  byBatch.set(batch, p);
  void p.then((r) => byBatch.set(batch, r));
  return p;
};

/** What a batch's default body was made into, by batch: made once, however many webhooks and attempts send it. */
const defaults = new WeakMap<Batch, Body>();

/**
 * The body a batch goes out with (CONTRACT 4.2, 4.7): the one it carries when it carries one (a
 * rendered body, `withBody`; a backlog entry's, as stored), else its default body, made on its first
 * request and the same bytes after. A webhook of another format is handed its batch with its body
 * (`withBody`, from `prepareBody`), so a request never depends on which format object made it.
 * `alloc` gives the memory for a body made of bytes (the interrogation thread's pool).
 */
export const requestBody = (batch: Batch, alloc: (length: number) => Buffer = Buffer.allocUnsafe): Body => {
  const { content } = batch;
  if (content.kind === 'stored') return renderDatapoints(content, batch.cause, alloc);
  let body = defaults.get(batch);
  if (body === undefined) defaults.set(batch, (body = datapointsOf(content, batch.cause, alloc)));
  return body;
};

/** The batch carrying `body` in place of its points: what its requests and its backlog entry send (the points then go). */
export const withBody = (batch: Batch, body: Body): Batch => ({ ...batch, content: storedContent(body.bytes, body.contentType) });

/** A body as text: what the backlog stores and `deadletter list --json` prints. */
export const bodyText = (body: Body): string => body.bytes.toString('utf8');

/** A body rendered before (a backlog entry's, or one made ahead), to send again as it is. */
export const storedContent = (body: string | Buffer, contentType = JSON_CONTENT_TYPE): Content => ({ kind: 'stored', body, contentType });

/**
 * How many data points a stored body holds: the length of its `datapoints`, else its lines for a
 * body of lines (`ndjson`, `influx-line`: a point a line; a JSONata body of lines counted the same
 * way, as near as it can be told); 0 for anything else. Read once per entry, when a
 * redriven or replayed batch needs its size.
 */
export const storedPoints = (body: string, contentType: string = JSON_CONTENT_TYPE): number => {
  try {
    // Stryker disable next-line OptionalChaining: null's datapoints throw, and the catch counts 0 as well
    const points = (JSON.parse(body) as { datapoints?: unknown } | null)?.datapoints;
    if (Array.isArray(points)) return points.length;
  } catch {
    // not JSON: a body of lines, perhaps
  }
  if (!contentType.startsWith(NDJSON_CONTENT_TYPE) && !contentType.startsWith('text/plain')) return 0;
  let n = 0;
  for (let k = body.indexOf('\n'); k >= 0; k = body.indexOf('\n', k + 1)) n++;
  return n;
};
