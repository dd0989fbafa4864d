import type { Batch, Cause } from '../read/batches';
import { flatRecord } from '../store/replies';
import { compareIds } from '../store/streamIds';
import type { EntryTrace } from '../../telemetry/tracing';
import { JSON_CONTENT_TYPE, storedContent, storedPoints } from './body';

/**
 * A webhook's backlog entry (CONTRACT 4.4): one dead-lettered batch of one webhook, in the
 * dead-letter stream `connectors:{ID}:deadletter`, with fields `webhook` (index), `url` (without
 * user information or query), `webhookId`, `error`, `attempts`, `body` (as it was rendered for the
 * webhook), `reason`, `contentType` when the body is not `application/json`, `cause` for an
 * interrogation's, a periodic interrogation's or a resend's request (CONTRACT 4.6, 4.7: sent again
 * with its `Webhook-Cause`), `points` (how many data points the batch holds, whatever its format),
 * and `traces` when the
 * batch's entries carried trace contexts (CONTRACT 9: a redriven or replayed request links to them
 * as the first attempt did): `{entry id} {traceparent}` pairs, space-separated. Pure: what an entry
 * says, and the order entries are redriven in.
 */
export type BacklogReason = 'exhausted' | 'overflow' | 'circuit' | 'refused' | 'disabled';

export const REDRIVABLE: ReadonlySet<string> = new Set<BacklogReason>(['exhausted', 'overflow', 'circuit', 'disabled']);

/** One backlog entry as the redrive knows it (the body is fetched when it is sent). */
export interface BacklogItem {
  /** The entry's ID in the dead-letter stream. */
  readonly id: string;
  readonly webhookId: string;
  readonly attempts: number;
}

export interface BacklogEntry extends BacklogItem {
  readonly webhook: number | null;
  readonly url: string;
  readonly error: string;
  readonly reason: string;
  readonly body: string;
  readonly contentType: string;
  /** The batch's trace contexts, as stored (`traces`); empty when it has none. */
  readonly traces: string;
  /** Why the batch was sent, when not as a live batch (`cause`); absent for a live one. */
  readonly cause?: Cause;
  /** How many data points the batch holds (`points`), whatever its format; absent in entries written before it was. */
  readonly points?: number;
}

const CAUSES: ReadonlySet<string> = new Set<Cause>(['interrogation', 'periodic', 'resend']);

/** `traces` as stored: `{id} {traceparent}` pairs, space-separated. */
export const encodeTraces = (traces: readonly EntryTrace[]): string => traces.map((t) => `${t.id} ${t.traceparent}`).join(' ');

const decodeTraces = (text: string): EntryTrace[] => {
  const words = text.split(' ');
  const out: EntryTrace[] = [];
  for (let i = 0; i + 1 < words.length; i += 2) out.push({ id: words[i]!, traceparent: words[i + 1]! });
  return out;
};

/** The webhook-id's first stream ID: the batch's place in stream order. */
const firstOf = (webhookId: string): string => webhookId.split('_')[0] ?? '0-0';
const isStreamId = (s: string): boolean => /^[0-9]+-[0-9]+$/.test(s);

/**
 * A backlog entry as a batch to send again: its original webhook-id, and its body as stored
 * (CONTRACT 4.4). The one way from an entry to a batch, for the lane's redrive and the operator's
 * replay alike; it is recorded already and goes to its own webhook only. Its size is read from the
 * body when asked for (a trace's attribute, the delivery lag's count).
 */
export const backlogBatch = (entry: Pick<BacklogEntry, 'id' | 'webhookId' | 'body' | 'contentType' | 'traces' | 'cause' | 'points'>): Batch => {
  let size: number | undefined = entry.points;
  return {
    webhookId: entry.webhookId, first: firstOf(entry.webhookId) || entry.id, ids: [], content: storedContent(entry.body, entry.contentType),
    get size() {
      return (size ??= storedPoints(entry.body, entry.contentType));
    },
    recorded: true, done: new Set(),
    ...(entry.traces === '' ? {} : { traces: decodeTraces(entry.traces) }),
    ...(entry.cause === undefined ? {} : { cause: entry.cause }),
  };
};

/** A dead-letter entry's flat field list as an entry. Total: any field may be missing or malformed. */
export const decodeBacklogEntry = (id: string, fields: readonly string[]): BacklogEntry => {
  const f = flatRecord(fields as unknown[]);
  const webhook = f.webhook === undefined || !/^[0-9]+$/.test(String(f.webhook)) ? null : Number(f.webhook);
  return {
    id,
    webhook,
    url: String(f.url ?? ''),
    webhookId: String(f.webhookId ?? ''),
    error: String(f.error ?? ''),
    attempts: Number(f.attempts ?? 0) || 0,
    reason: String(f.reason ?? 'exhausted'),
    body: String(f.body ?? ''),
    contentType: typeof f.contentType === 'string' && f.contentType !== '' ? f.contentType : JSON_CONTENT_TYPE,
    traces: String(f.traces ?? ''),
    // an unknown cause (written by another version) is left out rather than sent as a header
    ...(typeof f.cause === 'string' && CAUSES.has(f.cause) ? { cause: f.cause as Cause } : {}),
    ...(typeof f.points === 'string' && /^[0-9]+$/.test(f.points) ? { points: Number(f.points) } : {}),
  };
};

/**
 * How many data points an entry holds: as written with it, else as its body shows (a body of the
 * default format or of lines); undefined for an older entry whose body does not say (JSONata's).
 */
export const entryPoints = (e: Pick<BacklogEntry, 'points' | 'body' | 'contentType'>): number | undefined => {
  if (e.points !== undefined) return e.points;
  const n = storedPoints(e.body, e.contentType);
  return n > 0 || /^\s*\{\s*"datapoints"\s*:/.test(e.body) ? n : undefined;
};

const INTERROGATION_ID = /^[gp]i-([0-9]+-[0-9]+)-([0-9]+)$/;

/**
 * A batch's place in stream order: its first stream ID; an interrogation's request (CONTRACT 4.6,
 * `gi-{P}-{k}`) sits just after the batches that begin at or before its `P` (the image holds their
 * effect), in `k` order.
 */
const placeOf = (webhookId: string): readonly [string, number, number] | undefined => {
  const m = INTERROGATION_ID.exec(webhookId);
  if (m !== null) return [m[1]!, 1, Number(m[2])];
  const first = firstOf(webhookId);
  return isStreamId(first) ? [first, 0, 0] : undefined;
};

/** Oldest first, by the batch's place in stream order (backlog invariant 2); entries without one last. */
export const byStreamOrder = (a: BacklogItem, b: BacklogItem): number => {
  const pa = placeOf(a.webhookId);
  const pb = placeOf(b.webhookId);
  if (pa === undefined || pb === undefined) return pa !== undefined ? -1 : pb !== undefined ? 1 : compareIds(a.id, b.id);
  return compareIds(pa[0], pb[0]) || pa[1] - pb[1] || pa[2] - pb[2] || compareIds(a.id, b.id);
};
