import jsonata from 'jsonata';
import type { FormatSettings, Precision } from '../../config/formatSettings';
import { clockMicros } from '../../telemetry/bodyTime';
import { pointLine } from './lineProtocol';

/**
 * The formats of CONTRACT 4.7 other than the default body, as `body.ts` uses them: each from a
 * batch's points (JSON texts) to its bytes, or to nothing to send.
 */

export type BodyFormat =
  | { readonly type: 'datapoints' }
  | { readonly type: 'ndjson' }
  | { readonly type: 'influx-line'; readonly measurement: string; readonly precision: Precision }
  | {
    readonly type: 'jsonata'; readonly expression: jsonata.Expression; readonly output: 'json' | 'ndjson'; readonly contentType: string;
    /** µs the main thread spent on other work while this expression's evaluations gave up their turn (`bodyTime.ts`). */
    readonly parked: { micros: number };
    /** The end of the last evaluation of this expression begun (`oneAtATime`). */
    readonly turns: { tail: Promise<unknown> };
  };
export type JsonataFormat = Extract<BodyFormat, { type: 'jsonata' }>;

export const NDJSON_CONTENT_TYPE = 'application/x-ndjson';
export const LINE_CONTENT_TYPE = 'text/plain; charset=utf-8';

/** A JSONata evaluation that runs longer is given up (CONTRACT 4.7). */
export const JSONATA_TIMEOUT_MS = 1000;
/** Evaluation steps between two turns of the event loop: a long evaluation lets the other webhooks' work run between its steps. */
const JSONATA_STEPS_PER_TURN = 2000;

/** The format of settings already checked (`formatSettings.ts`): a JSONata expression compiled, a precision resolved. */
export const bodyFormatOf = (f: FormatSettings, precision: Precision): BodyFormat => {
  switch (f.type) {
    case 'datapoints':
    case 'ndjson':
      return { type: f.type };
    case 'influx-line':
      return { type: 'influx-line', measurement: f.measurement ?? 'datapoints', precision };
    case 'jsonata': {
      const expression = jsonata(f.expression, { timeout: JSONATA_TIMEOUT_MS });
      let steps = 0;
      const parked = { micros: 0 };
      /** A turn for the others: what they spend meanwhile is not this expression's. */
      const turn = () => new Promise<void>((resolve) => {
        const t0 = clockMicros();
        setImmediate(() => {
          parked.micros += clockMicros() - t0;
          resolve();
        });
      });
      // evaluation is asynchronous step by step; every few thousand steps the others get a turn
      expression.assign(Symbol.for('jsonata.__evaluate_entry') as unknown as string, () =>
        // Stryker disable next-line ConditionalExpression,EqualityOperator,UpdateOperator: how often it yields (a test shows that it does)
        ++steps % JSONATA_STEPS_PER_TURN === 0 ? turn() : undefined);
      const output = f.output ?? 'json';
      return { type: 'jsonata', expression, output, contentType: f.contentType ?? (output === 'json' ? 'application/json' : NDJSON_CONTENT_TYPE), parked, turns: { tail: Promise.resolve() } };
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
    // Stryker disable next-line StringLiteral: a batch has an ID for every point
    const line = pointLine(points[i]!, f, ids === undefined ? undefined : entryMs(ids[i] ?? ''));
    if (line === undefined) skipped++;
    else text += line;
  }
  return { text, skipped };
};

/**
 * `work` (an evaluation of `f`'s expression) once the evaluations of it begun before have ended:
 * an expression evaluates one batch at a time, in the order they came. JSONata's 1 s limit is
 * wall time from the evaluation's start, and evaluations run side by side share the thread step
 * by step: 200 batches arriving at once (a lane catching up) would each take as long as all of
 * them, and most would be refused for running longer than 1 s though each takes 20 ms alone. One
 * at a time, each is timed (`parked`, `webhook_body_seconds_total`) and limited by its own run.
 * Other expressions (other webhooks) are not held: they take turns with this one.
 */
export const oneAtATime = <T>(f: JsonataFormat, work: () => Promise<T>): Promise<T> => {
  const run = f.turns.tail.then(work);
  f.turns.tail = run.then(() => undefined, () => undefined);
  return run;
};

/** The JSONata result as the body's text; undefined for JSONata's nothing. Throws what cannot be sent. */
export const jsonataText = async (f: JsonataFormat, input: unknown): Promise<string | undefined> => {
  let result: unknown;
  try {
    result = await f.expression.evaluate(input);
  } catch (err) {
    const e = err as { code?: string; message?: string; position?: number };
    if (e.code === 'D1012') throw new Error(`the expression ran longer than ${JSONATA_TIMEOUT_MS} ms`);
    throw new Error(`${e.message ?? String(err)}${e.code !== undefined ? ` (${e.code}${e.position !== undefined ? ` at character ${e.position}` : ''})` : ''}`);
  }
  if (result === undefined) return undefined;
  if (f.output === 'json') return JSON.stringify(result);
  if (!Array.isArray(result)) throw new Error(`output "ndjson" needs an array, the expression gave ${result === null ? 'null' : typeof result}`);
  let text = '';
  // Stryker disable next-line StringLiteral: JSONata's arrays hold no undefined or functions (JSON.stringify's undefined)
  for (const item of result) text += `${JSON.stringify(item) ?? 'null'}\n`;
  return text;
};
