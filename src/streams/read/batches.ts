import { bufferTime, filter, map, type OperatorFunction, type SchedulerLike, asyncScheduler } from 'rxjs';
import type { DecodedEntry } from './entries';
import type { BatchRecord } from './deliveryState';
import type { EntryTrace } from '../../telemetry/tracing';

export interface Batch {
  /** `{first}_{last}` stream IDs: the same on every retry, for every webhook, and after a restart. */
  readonly webhookId: string;
  /** The first ID as recorded: the key of the batch's delivery record. */
  readonly first: string;
  /** The entries to acknowledge once every webhook has the batch. */
  readonly ids: readonly string[];
  /** The request body, serialised once for every webhook. */
  readonly body: string;
  /**
   * The body's UTF-8 bytes, when it was made as bytes (an interrogation's request,
   * `interrogationBatch`): what is sent and signed; `body` is their text, made when asked for.
   */
  readonly bytes?: Buffer;
  readonly size: number;
  /** A re-formed batch: false, it is recorded already; and which webhooks have it (keys). */
  readonly recorded: boolean;
  readonly done: ReadonlySet<string>;
  /**
   * The parts of filtered webhooks (CONTRACT 4.5), by webhook key: what each gets of the batch
   * (null: nothing). A webhook without an entry here gets the whole batch.
   */
  readonly parts?: ReadonlyMap<string, Batch | null>;
  /** The entries' trace contexts (CONTRACT 9), when any entry has one: each request's span links to them. */
  readonly traces?: readonly EntryTrace[];
}

const NONE: ReadonlySet<string> = new Set();

/**
 * A batch of decoded entries; a re-formed one keeps the webhook-id of its record (entries deleted
 * from the stream meanwhile do not change it: the receiver keeps the copy it has).
 */
export const toBatch = (entries: readonly DecodedEntry[], record?: Pick<BatchRecord, 'first' | 'last' | 'done'>): Batch => {
  const batch: Batch = {
    webhookId: record !== undefined ? `${record.first}_${record.last}` : `${entries[0]!.id}_${entries[entries.length - 1]!.id}`,
    first: record?.first ?? entries[0]!.id,
    ids: entries.map((e) => e.id),
    body: `{"datapoints":[${entries.map((e) => e.json).join(',')}]}`,
    size: entries.length,
    recorded: record !== undefined,
    done: record?.done ?? NONE,
  };
  const traces = tracesOf(entries);
  return traces === undefined ? batch : { ...batch, traces };
};

/** The entries' trace contexts; undefined when none has one (tracing off: nothing is added). */
const tracesOf = (entries: readonly DecodedEntry[]): EntryTrace[] | undefined => {
  let traces: EntryTrace[] | undefined;
  for (const e of entries) if (e.traceparent !== undefined) (traces ??= []).push({ id: e.id, traceparent: e.traceparent });
  return traces;
};

/**
 * A batch closes `windowMs` after it opened or when it holds `maxSize` entries; `bufferTime`
 * emits `[]` for an empty window, which is dropped. On completion the open batch is flushed.
 */
export const batches = (
  windowMs: number, maxSize: number, scheduler: SchedulerLike = asyncScheduler, form: (entries: readonly DecodedEntry[]) => Batch = toBatch,
): OperatorFunction<DecodedEntry, Batch> =>
  (source) =>
    source.pipe(
      bufferTime(windowMs, null, maxSize, scheduler),
      filter((b) => b.length > 0),
      map((entries) => form(entries)),
    );
