import type { PostBatch } from '../webhook/answers';

/** A request's body as its thread rendered it, taken for the backlog. */
export interface TakenBody {
  readonly body: string;
  readonly contentType: string;
}

/**
 * What reads a run's image and sends its requests (CONTRACT 4.6): in the product, a thread of its
 * own with a connection of its own (`src/runtime/interrogation/imageThread.ts`).
 */
/** A request read on the thread: its points, and what its format made of them (CONTRACT 4.7). */
export interface ThreadRequest {
  readonly size: number;
  /** It could not be rendered: it goes to the backlog at once. */
  readonly renderError?: string;
  /** Points its format left out. */
  readonly skipped?: number;
}

export interface ImageThread {
  /**
   * Reads the next request: its number of points, or null when the image has no more. Request `k`
   * (from 1) is the `k`-th read; its body stays on the thread (`webhook-id` `gi-`/`pi-{P}-{k}`).
   */
  next(): Promise<ThreadRequest | null>;
  /** Sends request `batch.webhookId` from the thread; its spans (CONTRACT 9) are made here. */
  readonly post: PostBatch;
  /** The request's body, for the backlog; the thread lets go of it (it does once a request is answered 2xx). */
  take(webhookId: string): Promise<TakenBody>;
  /** Ends the thread: a scan, a read or requests under way are cut. */
  close(): void;
}
