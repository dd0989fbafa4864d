/**
 * The operator page's own logic (CONTRACT 6.8), apart from the page: answers of the public
 * endpoints turned into rows of text, and what a caller is offered. Pure and free of the DOM (the
 * page inserts every value as text); compiled for the browser by `tsconfig.ui.json` and for the
 * tests as it is. Invariants (each has rows in test/ui.model.test.ts):
 * 1. Every cell is a string, whatever the answer holds (a missing field is empty, an object is its
 *    JSON): nothing of an answer reaches the page except as text.
 * 2. A webhook row shows no URL, query, header or secret: only the fields named in `WEBHOOK_COLUMNS`.
 * 3. An action is offered only to a caller the endpoint let through: the webhooks' buttons only when
 *    `GET /api/webhooks` answered 2xx (a caller with `operate`, or no `callers` at all).
 */

/** How an answer's status reads for the page: signed in, asked for a key, or refused (with the detail shown). */
export type Access = 'ok' | 'sign-in' | 'refused' | 'failed';

export const accessOf = (status: number): Access =>
  status >= 200 && status < 300 ? 'ok' : status === 401 ? 'sign-in' : status === 403 ? 'refused' : 'failed';

/** A value as a cell's text (invariant 1). */
export const cell = (v: unknown): string => {
  if (v === undefined || v === null) return '';
  // a number or a boolean reads the same as its JSON
  return typeof v === 'string' ? v : JSON.stringify(v);
};

const fieldOf = (o: unknown, key: string): unknown => (o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>)[key] : undefined);
const listOf = (o: unknown, key: string): unknown[] => {
  const v = fieldOf(o, key);
  return Array.isArray(v) ? v : [];
};

/** The columns of the `Webhooks` table: header, and the status field each shows. */
export const WEBHOOK_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['#', 'index'], ['Host', 'host'], ['Format', 'format'], ['State', 'state'], ['In flight', 'inFlight'],
  ['Queued', 'queued'], ['Backlog', 'backlog'], ['Last success', 'lastSuccessAt'], ['Last error', 'lastError'],
];

export interface WebhookRow {
  readonly index: number;
  readonly cells: readonly string[];
  readonly state: string;
}

/** `GET /api/webhooks` as rows (invariants 1, 2); an entry without an integer index is left out (no button could name it). */
export const webhookRows = (answer: unknown): WebhookRow[] =>
  listOf(answer, 'webhooks').flatMap((w) => {
    const index = fieldOf(w, 'index');
    if (!Number.isInteger(index) || (index as number) < 0) return [];
    return [{ index: index as number, state: cell(fieldOf(w, 'state')), cells: WEBHOOK_COLUMNS.map(([, key]) => cell(key === 'format' ? fieldOf(w, key) ?? 'datapoints' : fieldOf(w, key))) }];
  });

/** What a caller is offered on a webhook's row (invariant 3). */
export const webhookActions = (access: Access): readonly string[] => (access === 'ok' ? ['Interrogate', 'Backlog', 'Replay', 'Purge'] : []);

export const BACKLOG_COLUMNS: readonly string[] = ['Time', 'Reason', 'webhook-id', 'Attempts', 'Error', 'Content type', 'Body'];

/** `GET /api/webhooks/{i}/backlog` as rows, and the `after` of the next page (null after the last). */
export const backlogRows = (answer: unknown): { rows: string[][]; next: string | null } => {
  const next = fieldOf(answer, 'next');
  return {
    rows: listOf(answer, 'entries').map((e) => [
      cell(fieldOf(e, 'at')), cell(fieldOf(e, 'reason')), cell(fieldOf(e, 'webhookId')), cell(fieldOf(e, 'attempts')),
      cell(fieldOf(e, 'error')), cell(fieldOf(e, 'contentType')), cell(fieldOf(e, 'bodyPreview')),
    ]),
    next: typeof next === 'string' ? next : null,
  };
};

/** The outcome of a replay or a purge, as the page shows it (CONTRACT 6.8). */
export const outcomeText = (action: 'Replay' | 'Purge', answer: unknown): string =>
  action === 'Replay' ? `delivered ${cell(fieldOf(answer, 'delivered'))}, failed ${cell(fieldOf(answer, 'failed'))}` : `purged ${cell(fieldOf(answer, 'purged'))}`;

export const DATAPOINT_COLUMNS: readonly string[] = ['casdu', 'ioa', 'type', 'value', 'timestamp', 'source'];

/** `GET /api/datapoints` as rows. */
export const datapointRows = (answer: unknown): string[][] => listOf(answer, 'datapoints').map((p) => DATAPOINT_COLUMNS.map((k) => cell(fieldOf(p, k))));

export const MAPPING_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['Topic', 'topic'], ['Name', 'name'], ['casdu', 'casdu'], ['ioa', 'ioa'], ['Type', 'type'], ['Value path', 'valuePath'], ['Timestamp path', 'timestampPath'],
];

/** `GET /api/mappings` as rows. */
export const mappingRows = (answer: unknown): string[][] => listOf(answer, 'mappings').map((m) => MAPPING_COLUMNS.map(([, k]) => cell(fieldOf(m, k))));

/** The query of the `Data points` form: only the fields filled in, each trimmed. */
export const datapointQuery = (casdu: string, ioa: string): string => {
  const parts = [['casdu', casdu.trim()], ['ioa', ioa.trim()]].filter(([, v]) => v !== '').map(([k, v]) => `${k}=${encodeURIComponent(v!)}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
};

/** A refusal's words: the problem details' `detail`, else the error's `message`, else the status. */
export const refusalText = (status: number, answer: unknown): string => {
  const detail = fieldOf(answer, 'detail') ?? fieldOf(answer, 'message');
  return typeof detail === 'string' && detail !== '' ? detail : `the connector answered ${status}`;
};
