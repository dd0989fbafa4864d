import type { FormatSettings, Precision } from '../../config/formatSettings';
import { jsonataProcess, type JsonataEvaluator } from './jsonataProcess';
import { pointLine, timestampMs } from './lineProtocol';

/**
 * The formats of CONTRACT 4.7 other than the default body, as `body.ts` uses them: each from a
 * batch's points (JSON texts) to its bytes, or to nothing to send. Every format carries the
 * longest body it may render (`Webhooks:MaxBodyBytes`, 4.7 "Size").
 */

export type BodyFormat = { readonly maxBodyBytes: number } & (
  | { readonly type: 'datapoints' }
  | { readonly type: 'ndjson' }
  | { readonly type: 'influx-line'; readonly measurement: string; readonly precision: Precision; readonly fields?: readonly string[] }
  | {
    readonly type: 'jsonata'; readonly output: 'json' | 'ndjson'; readonly contentType: string;
    /** Its evaluations, in a process of the expression's own (`jsonataProcess.ts`). */
    readonly evaluator: JsonataEvaluator;
  });
export type JsonataFormat = Extract<BodyFormat, { type: 'jsonata' }>;

export const NDJSON_CONTENT_TYPE = 'application/x-ndjson';
export const LINE_CONTENT_TYPE = 'text/plain; charset=utf-8';

/** CONTRACT 4.7: `Webhooks:MaxBodyBytes`' default, 16 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The format of settings already checked (`formatSettings.ts`): a precision resolved, a JSONata expression given its process (started when first used). */
export const bodyFormatOf = (f: FormatSettings, precision: Precision, maxBodyBytes = DEFAULT_MAX_BODY_BYTES): BodyFormat => {
  switch (f.type) {
    case 'datapoints':
    case 'ndjson':
      return { type: f.type, maxBodyBytes };
    case 'influx-line':
      return { type: 'influx-line', measurement: f.measurement ?? 'datapoints', precision, maxBodyBytes, ...(f.fields !== undefined ? { fields: f.fields } : {}) };
    case 'jsonata': {
      const output = f.output ?? 'json';
      return {
        type: 'jsonata', output, maxBodyBytes,
        contentType: f.contentType ?? (output === 'json' ? 'application/json' : NDJSON_CONTENT_TYPE),
        evaluator: jsonataProcess({ expression: f.expression, output, maxBodyBytes }),
      };
    }
  }
};

/**
 * The `ndjson` body (CONTRACT 4.7) of points given as their JSON texts joined by commas: the
 * same bytes, with each comma between two points made a line break and a line break after the
 * last, so that each point stands on its line as it stands in `datapoints`. The commas between
 * points are found by one scan of the bytes that follows strings and nesting. A point stored on
 * several lines is made one: a line break outside a string (JSON allows none inside one) is
 * whitespace, and becomes a space. Nothing for no points.
 */
export const ndjsonBytes = (joined: string): Buffer => {
  if (joined.length === 0) return Buffer.alloc(0);
  // Stryker disable next-line StringLiteral: 'utf8' is Buffer.from's default
  const bytes = Buffer.from(`${joined}\n`, 'utf8');
  let depth = 0;
  let inString = false;
  // the last byte is the final line break; every byte of a multi-byte UTF-8 character is >= 0x80,
  // so none is taken for a quote, a bracket, a comma or a line break
  const end = bytes.length - 1;
  for (let i = 0; i < end; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c) i++; // `\`: the next byte is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c) {
      if (depth === 0) bytes[i] = 0x0a;
    } else if (c === 0x0a || c === 0x0d) bytes[i] = 0x20;
  }
  return bytes;
};

/** The time of a stream entry, from its ID (`{ms}-{seq}`). */
export const entryMs = (id: string): number | undefined => {
  const dash = id.indexOf('-');
  const ms = dash > 0 ? Number(id.slice(0, dash)) : NaN;
  return Number.isSafeInteger(ms) ? ms : undefined;
};

/** Line protocol of the points (parsed objects); `ids` their entries' IDs (none: no time for points without a timestamp). */
export const influxLines = (f: Extract<BodyFormat, { type: 'influx-line' }>, points: ReadonlyArray<Record<string, unknown>>, ids: readonly string[] | undefined): { text: string; skipped: number } => {
  let text = '';
  let skipped = 0;
  for (let i = 0; i < points.length; i++) {
    const point = points[i]!;
    // the entry's time only for a point without a readable timestamp of its own (read once more: the last one read is kept)
    // Stryker disable next-line StringLiteral: a batch has an ID for every point
    const line = pointLine(point, f, ids === undefined || timestampMs(point.timestamp) !== undefined ? undefined : entryMs(ids[i] ?? ''));
    if (line === undefined) skipped++;
    else text += line;
  }
  return { text, skipped };
};

