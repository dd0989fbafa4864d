/**
 * A look at a consumer's pending list: true for an entry this process has in flight now, or has
 * acknowledged since the look began. `end()` once the look's pages are filtered.
 */
export interface PendingLook {
  has(id: string): boolean;
  end(): void;
}

/**
 * The entries this process has taken in from the stream and not yet acknowledged (CONTRACT 4.3:
 * after a reconnection its own pending entries are re-read, and those still in its pipeline are
 * skipped rather than delivered twice).
 *
 * A pending list read is a snapshot: it still holds an entry whose acknowledgement lands after
 * the read, and the entry is no longer in flight when the page is looked at (an instant later, or
 * seconds later for a batch a page cut). So each look also remembers what was acknowledged since
 * it began — while it lasts, and only then. (Checked against the in-flight set alone, the
 * acknowledged head of a batch went out again under the batch's webhook-id: a chaos run saw it.)
 */
export interface InFlight {
  /** Taken in: read from the stream and handed to the pipeline. */
  add(ids: Iterable<string>): void;
  /** Acknowledged (the XACK landed). */
  acknowledged(ids: Iterable<string>): void;
  /** Begins a look at a pending list; call before the first read of it. */
  look(): PendingLook;
  size(): number;
}

export const inFlightEntries = (): InFlight => {
  const inFlight = new Set<string>();
  const looks = new Set<Set<string>>();
  return {
    add: (ids) => {
      for (const id of ids) inFlight.add(id);
    },
    acknowledged: (ids) => {
      for (const id of ids) {
        inFlight.delete(id);
        for (const since of looks) since.add(id);
      }
    },
    look: () => {
      const since = new Set<string>();
      looks.add(since);
      return { has: (id) => inFlight.has(id) || since.has(id), end: () => looks.delete(since) };
    },
    size: () => inFlight.size,
  };
};
