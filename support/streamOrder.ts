/**
 * A receiver's state kept in stream order (docs/push.md, "Holding exactly the image"): the chaos
 * run's late receiver and the tests apply webhook requests with it, as a receiver that must hold
 * exactly the process image would.
 *
 * Every `webhook-id` carries a stream position (CONTRACT 4.2, 4.6): a live batch `{first}_{last}`
 * stands at `{last}`, an interrogation's request `gi-{P}-{k}` / `pi-{P}-{k}` at `P`. A point is
 * taken from a batch only when the batch ends after the position held for it (within the batch,
 * the last point of an address wins), from an interrogation when `P` is not before it. So a request
 * that arrives after a newer one — a retry, or a crashed replica's entries claimed later — changes
 * nothing, and once every request has arrived the state is the image.
 */

/** A stream ID (`{ms}-{seq}`) as two numbers. */
export type StreamId = readonly [number, number];

export const streamId = (s: string): StreamId => {
  const [ms, seq] = s.split('-');
  return [Number(ms), Number(seq)];
};

/** Whether `a` comes after `b` in the stream. */
export const after = (a: StreamId, b: StreamId): boolean => (a[0] !== b[0] ? a[0] > b[0] : a[1] > b[1]);

/** Where a request stands in the stream, from its webhook-id; `undefined` for another form (a resend's `r-…`). */
export const placeOf = (webhookId: string): { readonly at: StreamId; readonly image: boolean } | undefined => {
  const image = /^[gp]i-(\d+-\d+)-\d+$/.exec(webhookId);
  if (image !== null) return { at: streamId(image[1]!), image: true };
  const batch = /^\d+-\d+_(\d+-\d+)$/.exec(webhookId);
  return batch === null ? undefined : { at: streamId(batch[1]!), image: false };
};

export interface Placed {
  readonly casdu?: unknown;
  readonly ioa?: unknown;
  readonly value?: unknown;
}

/** `{casdu}:{ioa}` → the value held and the stream position it is from. */
export class StreamOrderedState {
  readonly held = new Map<string, { readonly value: unknown; readonly at: StreamId }>();

  /**
   * Applies one request (the first copy of its webhook-id: de-duplicate before). Returns the
   * addresses it took, or `undefined` when its webhook-id carries no position (nothing applied).
   */
  apply(webhookId: string, points: readonly Placed[]): Set<string> | undefined {
    const place = placeOf(webhookId);
    if (place === undefined) return undefined;
    const takes = (key: string): boolean => {
      const held = this.held.get(key);
      return held === undefined || (place.image ? !after(held.at, place.at) : after(place.at, held.at));
    };
    // decided on what was held before this request: a batch's later point of one address is taken too
    const taken = new Set(points.map(keyOf).filter(takes));
    for (const p of points) if (taken.has(keyOf(p))) this.held.set(keyOf(p), { value: p.value, at: place.at });
    return taken;
  }

  value(key: string): unknown {
    return this.held.get(key)?.value;
  }
}

export const keyOf = (p: Placed): string => `${String(p.casdu)}:${String(p.ioa)}`;
