/**
 * Memory for an interrogation thread's request bodies (`imageThreadMain.ts`), used again once a
 * request is done. Why: each body (about 120 KB for 1,000 points) lives as long as its request,
 * longer than a young collection, so a fresh one each time is promoted and its memory comes back
 * only at a full collection; measured for 1,000,000 points without load, the connector's peak RSS
 * growth was 55–74 MB with a fresh buffer a request and 47–53 MB with these (bench/README.md).
 *
 * A body is given back only when its request was answered 2xx: the receiver then had it whole (a
 * receiver that answers before it has read the body gets the rest of the bytes from the buffer
 * however they then read — it has answered already). A body taken for the backlog, or one whose
 * request was cut, is not given back: a write cut short may still hold it.
 */
export interface BodyPool {
  /** `length` bytes to fill: a free buffer large enough, or a new one with room to spare. */
  alloc(length: number): Buffer;
  /** The body of a request answered 2xx: its memory is free for another. */
  release(body: Buffer): void;
}

/** Free buffers kept at most (a run has MaxInFlight requests and one read ahead under way). */
const MAX_FREE = 16;
/** A new buffer's room beyond the body it is made for: bodies of one run differ a little in size. */
const ROOM = 1.25;

export const bodyPool = (): BodyPool => {
  const free: ArrayBuffer[] = [];
  const made = new WeakSet<ArrayBuffer>();
  return {
    alloc: (length) => {
      for (let i = free.length - 1; i >= 0; i--) {
        if (free[i]!.byteLength >= length) return Buffer.from(free.splice(i, 1)[0]!, 0, length);
      }
      // none fits: one that did not goes (the list never fills with buffers too small to use)
      free.shift();
      const memory = new ArrayBuffer(Math.ceil(length * ROOM));
      made.add(memory);
      return Buffer.from(memory, 0, length);
    },
    release: (body) => {
      // only what this pool made, once
      const memory = body.buffer as ArrayBuffer;
      if (body.byteOffset !== 0 || !made.has(memory) || free.includes(memory) || free.length >= MAX_FREE) return;
      free.push(memory);
    },
  };
};
