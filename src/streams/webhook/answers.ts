import type { Observable } from 'rxjs';
import type { Batch } from '../read/batches';
import { refusedByRule } from './agents';

/**
 * A webhook's answers as the lanes and the operator's replay read them (CONTRACT 4.2): what a
 * request came back with, whether it counts as delivered, and when to try again.
 */

/** What a webhook answered. A timeout or network failure is an error of the observable instead. */
export interface WebhookResponse {
  readonly status: number;
  readonly retryAfter?: string | undefined;
}

/** The effect of sending one attempt to a subscription's webhook; the live one is axios, marble tests pass cold observables. */
export type PostBatch = (batch: Batch) => Observable<WebhookResponse>;

export type AttemptResult =
  | { readonly ok: true; readonly status: number }
  | {
      readonly ok: false; readonly retryable: boolean; readonly status?: number; readonly reason: string; readonly retryAfterMs?: number;
      /** 410 Gone: the receiver asks us to stop sending (Standard Webhooks; CONTRACT 4.5). */
      readonly gone?: true;
    };

export const RETRY_AFTER_CAP_MS = 30_000;

/** `Retry-After` as seconds or an HTTP date, capped at 30 s; undefined when absent or unreadable. */
export const parseRetryAfter = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined;
  const v = value.trim();
  const ms = /^[0-9]+$/.test(v) ? Number(v) * 1000 : Date.parse(v) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), RETRY_AFTER_CAP_MS) : undefined;
};

/** CONTRACT 4.2: 2xx success; 408, 429, 5xx retried (honouring Retry-After on 429/503); other answers not; 410 disables (4.5). */
export const classifyResponse = (r: WebhookResponse, now: number): AttemptResult => {
  const s = r.status;
  if (s >= 200 && s < 300) return { ok: true, status: s };
  if (s === 410) return { ok: false, retryable: false, status: s, reason: 'HTTP 410 Gone', gone: true };
  const retryable = s === 408 || s === 429 || s >= 500;
  const retryAfterMs = s === 429 || s === 503 ? parseRetryAfter(r.retryAfter, now) : undefined;
  return { ok: false, retryable, status: s, reason: `HTTP ${s}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
};

/** A timeout or network failure is retried; a connection the network rule refused is not (CONTRACT 6.7: as a 4xx). */
export const classifyError = (err: unknown): AttemptResult => ({
  ok: false,
  retryable: refusedByRule(err) === undefined,
  reason: err instanceof Error ? err.message : String(err),
});

/** About 0.5 s, 1 s, 2 s, 4 s … with ±25 % jitter, so that webhooks retried together spread out. */
export const exponentialBackoff = (random: () => number = Math.random) => (attempt: number): number =>
  Math.round(500 * 2 ** (attempt - 1) * (0.75 + random() * 0.5));
