/** One entry of `process:updates` as read; `fields` is null when the entry was trimmed while pending. */
export interface StreamEntry {
  readonly id: string;
  readonly fields: readonly string[] | null;
}

/** An entry decoded into the data point object a webhook receives (CONTRACT 4.2), as JSON text. */
export interface DecodedEntry {
  readonly id: string;
  readonly json: string;
  /** The point's address and type as numbers, when it has them: what a webhook's filter compares (CONTRACT 4.5). */
  readonly casdu?: number | undefined;
  readonly ioa?: number | undefined;
  readonly type?: number | undefined;
  /** The trace context the writer stored with the entry (CONTRACT 9), when it did. */
  readonly traceparent?: string | undefined;
  /** The data point object parsed, when asked for (report by exception, CONTRACT 4.8, compares its fields). */
  readonly point?: Record<string, unknown>;
}

export type DecodeResult = { readonly ok: true; readonly entry: DecodedEntry } | { readonly ok: false; readonly id: string; readonly reason: string };

const isStringArray = (u: unknown): u is string[] => Array.isArray(u) && u.every((x) => typeof x === 'string');

/** `[id, [field, value, …]]` or `[id, null]` (RESP2). Anything else is a protocol surprise: thrown. */
const decodeEntryReply = (u: unknown): StreamEntry => {
  if (Array.isArray(u) && u.length === 2 && typeof u[0] === 'string' && (u[1] === null || (isStringArray(u[1]) && u[1].length % 2 === 0))) {
    return { id: u[0], fields: u[1] };
  }
  throw new Error(`unexpected stream entry reply: ${JSON.stringify(u)?.slice(0, 200)}`);
};

export const decodeEntries = (u: unknown): StreamEntry[] => {
  if (!Array.isArray(u)) throw new Error(`unexpected entry list reply: ${JSON.stringify(u)?.slice(0, 200)}`);
  return u.map(decodeEntryReply);
};

/**
 * An `XREAD`/`XREADGROUP` reply under RESP2: `null` on timeout, else `[[stream, [entry, …]], …]`.
 * (RESP3 would answer a map instead: the connection is opened with protocol 2 on purpose.)
 */
export const decodeReadReply = (u: unknown, stream: string): StreamEntry[] => {
  if (u === null) return [];
  if (!Array.isArray(u)) throw new Error(`unexpected XREADGROUP reply: ${JSON.stringify(u)?.slice(0, 200)}`);
  const out: StreamEntry[] = [];
  for (const s of u) {
    if (!Array.isArray(s) || s.length !== 2 || s[0] !== stream) throw new Error(`unexpected XREADGROUP stream reply: ${JSON.stringify(s)?.slice(0, 200)}`);
    out.push(...decodeEntries(s[1]));
  }
  return out;
};

const ADDRESS = /^[0-9]+$/;
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** An integer, or undefined for anything else. */
const integerOf = (u: unknown): number | undefined => (typeof u === 'number' && Number.isInteger(u) ? u : undefined);

/** The entry with the point's `casdu`, `ioa` and `type` where they are integers (the filter's view of it); one shape for every entry. */
const decoded = (id: string, json: string, point: Record<string, unknown>, traceparent: string | undefined, keep: boolean): DecodedEntry =>
  keep
    ? { id, json, casdu: integerOf(point.casdu), ioa: integerOf(point.ioa), type: integerOf(point.type), traceparent, point }
    : { id, json, casdu: integerOf(point.casdu), ioa: integerOf(point.ioa), type: integerOf(point.type), traceparent };

/**
 * CONTRACT 4.2: `data` parsed; `casdu`, `ioa`, `source` filled from the entry's fields where
 * `data` lacks them; every other field of `data` kept as it is. Total over any entry (CONTRACT
 * 6.5): whatever a foreign writer put in the stream, it returns a result and never throws.
 */
export const decodeEntry = (e: StreamEntry, keepPoint = false): DecodeResult => {
  if (e.fields === null) return { ok: false, id: e.id, reason: 'entry was deleted from the stream before it was delivered' };
  let data: string | undefined;
  let casdu: string | undefined;
  let ioa: string | undefined;
  let source: string | undefined;
  let traceparent: string | undefined;
  for (let i = 0; i + 1 < e.fields.length; i += 2) {
    const value = e.fields[i + 1]!;
    switch (e.fields[i]) {
      case 'data': data = value; break;
      case 'casdu': casdu = value; break;
      case 'ioa': ioa = value; break;
      case 'source': source = value; break;
      // a W3C trace context, or nothing: what another writer stored there is not carried on
      case 'traceparent': traceparent = TRACEPARENT.test(value) ? value : undefined; break;
    }
  }
  if (data === undefined) return { ok: false, id: e.id, reason: 'entry has no data field' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return { ok: false, id: e.id, reason: 'data is not valid JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, id: e.id, reason: 'data is not a JSON object' };
  const point = parsed as Record<string, unknown>;
  const fill = (!('casdu' in point) && casdu !== undefined) || (!('ioa' in point) && ioa !== undefined) || (!('source' in point) && source !== undefined);
  // The common case (the inbound connector writes complete objects) passes the stored text on as
  // it is: parsed only to be checked, never serialised again.
  if (!fill) return { ok: true, entry: decoded(e.id, data, point, traceparent, keepPoint) };
  if (!('casdu' in point) && casdu !== undefined) point.casdu = ADDRESS.test(casdu) ? Number(casdu) : casdu;
  if (!('ioa' in point) && ioa !== undefined) point.ioa = ADDRESS.test(ioa) ? Number(ioa) : ioa;
  if (!('source' in point) && source !== undefined) point.source = source;
  try {
    return { ok: true, entry: decoded(e.id, JSON.stringify(point), point, traceparent, keepPoint) };
  } catch (err) {
    // e.g. nested too deep for the serialiser (RangeError): undeliverable, never the pipeline's end
    return { ok: false, id: e.id, reason: `data cannot be serialised again: ${(err as Error).message}` };
  }
};
