import type { Receiver } from './receiver';

/** What a receiver got, counted as a subscriber that de-duplicates by `webhook-id` would see it. */
export interface Tally {
  /** Points received in 2xx-answered requests, duplicates included. */
  readonly raw: number;
  /** Points that arrived more than once, before de-duplication. */
  readonly rawDuplicates: number;
  /** Points that arrived more than once after de-duplication by webhook-id. */
  readonly duplicatesAfterDedup: number;
  /** webhook-ids seen with two different bodies. */
  readonly idsWithTwoContents: number;
  /** Distinct sequence numbers received. */
  readonly seqs: ReadonlySet<number>;
  /** webhook-id → body, first seen. */
  readonly bodies: ReadonlyMap<string, string>;
}

/** Counts by the `seq` each test point carries in its data. */
export const tally = (r: Receiver): Tally => {
  const bodies = new Map<string, string>();
  const seen = new Map<number, number>();
  const seenDedup = new Map<number, number>();
  let raw = 0;
  let idsWithTwoContents = 0;
  for (const q of r.delivered()) {
    const id = String(q.headers['webhook-id']);
    const seqs = (JSON.parse(q.body) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq);
    raw += seqs.length;
    for (const s of seqs) seen.set(s, (seen.get(s) ?? 0) + 1);
    const before = bodies.get(id);
    if (before === undefined) {
      bodies.set(id, q.body);
      for (const s of seqs) seenDedup.set(s, (seenDedup.get(s) ?? 0) + 1);
    } else if (before !== q.body) idsWithTwoContents++;
  }
  const extra = (m: Map<number, number>) => [...m.values()].reduce((n, c) => n + c - 1, 0);
  return { raw, rawDuplicates: extra(seen), duplicatesAfterDedup: extra(seenDedup), idsWithTwoContents, seqs: new Set(seen.keys()), bodies };
};

/** The sequence numbers from..to-1 that a tally lacks. */
export const missing = (t: Tally, from: number, to: number): number[] => {
  const out: number[] = [];
  for (let s = from; s < to; s++) if (!t.seqs.has(s)) out.push(s);
  return out;
};
