import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { DecodedEntry } from './entries';
import type { BatchRecord } from './deliveryState';
import type { EntryTrace } from '../../telemetry/tracing';

/** Why a request was sent, when not as a live batch (CONTRACT 4.6). */
export type Cause = 'interrogation' | 'periodic' | 'resend';

/**
 * What a batch holds to send. Its body is rendered from this for each webhook's format, once per
 * batch and format, by `src/streams/webhook/body.ts`: nothing else builds or reads a body.
 */
export type Content =
  /**
   * Data points as stored JSON objects, their texts joined by commas (a live batch, a part, a
   * resend): one string while the batch is in flight, not one per point. (Kept as an array of the
   * points' strings, the young generation's collector copied them while their batch was in flight:
   * at 5,000 points/s, 54.0 µs of CPU a point against 51.0 before, mean of 8 runs each; 51.3 so.)
   */
  | { readonly kind: 'text'; readonly points: string }
  /** Data points as stored JSON objects' UTF-8 bytes (an interrogation's request, read as bytes). */
  | { readonly kind: 'bytes'; readonly points: readonly Uint8Array[] }
  /**
   * A body rendered before: as a backlog entry stores it (CONTRACT 4.4), or as the interrogation
   * thread made it ahead of its request; sent again as it is.
   */
  | { readonly kind: 'stored'; readonly body: string | Buffer; readonly contentType: string }
  /**
   * An interrogation's request whose body stays on its thread, which sends it (`RunSender`);
   * `renderError` when the thread could not render it in the webhook's format (CONTRACT 4.7: it
   * goes to the backlog at once, with the default body), `skipped` the points its format left out.
   */
  | { readonly kind: 'elsewhere'; readonly renderError?: string; readonly skipped?: number };

export interface Batch {
  /** `{first}_{last}` stream IDs: the same on every retry, for every webhook, and after a restart. */
  readonly webhookId: string;
  /** The first ID as recorded: the key of the batch's delivery record. */
  readonly first: string;
  /** The entries to acknowledge once every webhook has the batch. */
  readonly ids: readonly string[];
  /** What it sends. */
  readonly content: Content;
  /** Why it is sent, when not as a live batch: an interrogation's or a resend's request. */
  readonly cause?: Cause;
  /** Data points it holds. */
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
    content: { kind: 'text', points: entries.map((e) => e.json).join(',') },
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
 * Entries, arriving in chunks as read, into batches: `bufferTime(windowMs, null, maxSize)` over
 * entries, carried a chunk at a time (CONTRACT 4.7 "Cost": nothing per entry between the read and
 * the batch). A window starts at subscription and again whenever a batch closes; a batch closes
 * when its window ends or when it holds `maxSize` entries (a chunk is cut there, and the rest goes
 * on in the next window); an empty window emits nothing. On completion the open batch is flushed;
 * an error passes on at once.
 */
export function batches(windowMs: number, maxSize: number, scheduler?: SchedulerLike): OperatorFunction<readonly DecodedEntry[], Batch>;
export function batches<T>(windowMs: number, maxSize: number, scheduler: SchedulerLike | undefined, form: (entries: readonly DecodedEntry[]) => T): OperatorFunction<readonly DecodedEntry[], T>;
export function batches<T>(
  windowMs: number, maxSize: number, scheduler: SchedulerLike = asyncScheduler, form: (entries: readonly DecodedEntry[]) => T = toBatch as unknown as (entries: readonly DecodedEntry[]) => T,
): OperatorFunction<readonly DecodedEntry[], T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      const max = Math.max(1, maxSize);
      let open: DecodedEntry[] = [];
      let window: Subscription | undefined;
      const startWindow = () => {
        window?.unsubscribe();
        window = scheduler.schedule(() => {
          window = undefined;
          close();
        }, windowMs);
      };
      /** Emits the open batch (if any) and starts the next window. */
      const close = () => {
        const entries = open;
        open = [];
        startWindow();
        if (entries.length > 0) subscriber.next(form(entries));
      };
      startWindow();
      const sub = source.subscribe({
        next: (chunk) => {
          let at = 0;
          while (at < chunk.length) {
            const take = Math.min(max - open.length, chunk.length - at);
            for (let i = at; i < at + take; i++) open.push(chunk[i]!);
            at += take;
            if (open.length >= max) close();
          }
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          window?.unsubscribe();
          window = undefined;
          if (open.length > 0) subscriber.next(form(open));
          open = [];
          subscriber.complete();
        },
      });
      return () => {
        sub.unsubscribe();
        window?.unsubscribe();
      };
    });
}
