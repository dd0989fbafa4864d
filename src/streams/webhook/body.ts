import type { Webhook } from '../../config/webhookSettings';
import type { Batch, Cause, Content } from '../read/batches';

/**
 * A webhook's request body (CONTRACT 4.2, 4.6): the one place that makes one from a batch, and the
 * one that reads one back. Every sender goes through `renderBody` — a live batch and its retries,
 * a filtered part, a redriven or replayed backlog entry, an interrogation's request on its thread, a
 * resend — and the backlog stores what it rendered. A body is rendered once per batch and format:
 * webhooks of one format share it, and every retry sends the same bytes (the signature is over them).
 */
export interface Body {
  /** What is sent (and signed): the body's UTF-8 bytes. */
  readonly bytes: Buffer;
  readonly contentType: string;
}

/** How a webhook's bodies are made: `{"datapoints":[…]}` (and `cause`) for now, the one format there is. */
export interface BodyFormat {
  readonly type: 'datapoints';
}

export const DATAPOINTS: BodyFormat = { type: 'datapoints' };

export const JSON_CONTENT_TYPE = 'application/json';

/** The webhook's format. Webhooks of one format get one object, so that they share each batch's rendering. */
export const formatOf = (_w: Webhook): BodyFormat => DATAPOINTS;

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

const render = (content: Content, cause: Cause | undefined, alloc: (length: number) => Buffer): Body => {
  switch (content.kind) {
    case 'text':
      return { bytes: Buffer.from(`${START}${content.points}${ENDS[cause ?? 'live']}`, 'utf8'), contentType: JSON_CONTENT_TYPE };
    case 'bytes':
      return { bytes: datapointsOfBytes(content.points, cause, alloc), contentType: JSON_CONTENT_TYPE };
    case 'stored':
      return { bytes: typeof content.body === 'string' ? Buffer.from(content.body, 'utf8') : content.body, contentType: content.contentType };
    case 'elsewhere':
      throw new Error('this request\'s body is on its interrogation thread: its run\'s sender sends it');
  }
};

/** Rendered bodies, by format and batch (a batch goes to every webhook of a format as the same object). */
const rendered = new WeakMap<BodyFormat, WeakMap<Batch, Body>>();

/**
 * The body `batch` goes out with to a webhook of `format`: made on the first request, the same
 * bytes after. `alloc` gives the memory for a body made of bytes (the interrogation thread's pool).
 */
export const renderBody = (format: BodyFormat, batch: Batch, alloc: (length: number) => Buffer = Buffer.allocUnsafe): Body => {
  let byBatch = rendered.get(format);
  if (byBatch === undefined) rendered.set(format, (byBatch = new WeakMap()));
  let body = byBatch.get(batch);
  if (body === undefined) byBatch.set(batch, (body = render(batch.content, batch.cause, alloc)));
  return body;
};

/** A body as text: what the backlog stores and `deadletter list --json` prints. */
export const bodyText = (body: Body): string => body.bytes.toString('utf8');

/** A body rendered before (a backlog entry's, or one made ahead), to send again as it is. */
export const storedContent = (body: string | Buffer, contentType = JSON_CONTENT_TYPE): Content => ({ kind: 'stored', body, contentType });

/** The batch with its body for `format` rendered now and kept instead of its points (which memory then lets go). */
export const renderedNow = (format: BodyFormat, batch: Batch, alloc?: (length: number) => Buffer): Batch => {
  const body = renderBody(format, batch, alloc);
  return { ...batch, content: storedContent(body.bytes, body.contentType) };
};

/**
 * How many data points a stored body holds: the length of its `datapoints` (0 when it is not a
 * body of ours). Read once per entry, when a redriven or replayed batch needs its size.
 */
export const storedPoints = (body: string): number => {
  try {
    const points = (JSON.parse(body) as { datapoints?: unknown }).datapoints;
    return Array.isArray(points) ? points.length : 0;
  } catch {
    return 0;
  }
};
