import { createHash } from 'node:crypto';
import type { Command } from '../../mapping/commands';

/**
 * CONTRACT 5.1.1: `Idempotency-Key` on `POST /api/datapoints`. The first request with a key takes
 * it with a short-lived "pending" marker (`SET … NX PX`), so that a concurrent duplicate is told
 * 409 instead of writing again; its answer (200 or 422) then replaces the marker in the same
 * `MULTI` as its writes, so the answer is stored exactly when the writes are applied — also when
 * the connection drops after `EXEC` was sent and nobody knows whether it ran. A later request with
 * the key and the same topic and body gets the stored answer and writes nothing.
 */

/** 1 to 255 printable ASCII characters, no space (0x21–0x7E). */
const KEY = /^[\x21-\x7e]{1,255}$/;

export const validIdempotencyKey = (header: string | string[] | undefined): header is string => typeof header === 'string' && KEY.test(header);

/** SHA-256 over the topic and the body bytes, NUL between them (a topic cannot hold a NUL that a body could supply). */
export const requestHash = (topic: string, body: Buffer | string): string => createHash('sha256').update(topic).update('\0').update(body).digest('hex');

export type Stored =
  | { readonly state: 'pending'; readonly hash: string }
  | { readonly state: 'done'; readonly hash: string; readonly status: number; readonly body: string };

/** Decodes a stored value; anything unreadable (a foreign writer's) is undefined. Total. */
export const decodeStored = (text: string | null): Stored | undefined => {
  if (text === null) return undefined;
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (typeof v.hash !== 'string') return undefined;
    if (v.state === 'pending') return { state: 'pending', hash: v.hash };
    if (v.state === 'done' && typeof v.status === 'number' && typeof v.body === 'string') return { state: 'done', hash: v.hash, status: v.status, body: v.body };
  } catch {
    /* not ours */
  }
  return undefined;
};

/** The marker a first request sets while it writes; it expires by itself if the process dies meanwhile. */
export const pendingCommand = (key: string, hash: string, lockMs: number): Command => ['set', key, JSON.stringify({ state: 'pending', hash }), 'PX', String(lockMs), 'NX'];

/** The stored answer, written in the request's own MULTI. */
export const doneCommand = (key: string, hash: string, status: number, body: string, ttlSeconds: number): Command => [
  'set', key, JSON.stringify({ state: 'done', hash, status, body }), 'EX', String(ttlSeconds),
];

/** What a request whose key is taken gets, from what is stored under it. */
export type Verdict =
  | { readonly kind: 'replay'; readonly status: number; readonly body: string }
  | { readonly kind: 'reused' }
  | { readonly kind: 'in_progress' }
  | { readonly kind: 'gone' };

export const verdictOf = (stored: Stored | undefined, hash: string, present: boolean): Verdict => {
  if (stored === undefined) return present ? { kind: 'reused' } : { kind: 'gone' };
  if (stored.hash !== hash) return { kind: 'reused' };
  return stored.state === 'pending' ? { kind: 'in_progress' } : { kind: 'replay', status: stored.status, body: stored.body };
};
