import type { RedisOptions } from 'ioredis';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Observable } from 'rxjs';
import type { WebhookResponse } from '../../streams/webhook/answers';
import type { Batch } from '../../streams/read/batches';
import type { ImageThread, TakenBody, ThreadRequest } from '../../streams/interrogation/thread';
import type { InterrogationCause } from '../../streams/webhook/interrogation';
import type { ClientSubscription } from '../../streams/webhook/client';
import type { DeliveryTrace } from '../../telemetry/tracing';
import { NetworkRefused } from '../../streams/webhook/agents';
import type { Refusal } from '../../config/networks';

/** A connection the rule refused, as plain data between the threads. */
export interface RefusedConnection { readonly address: string; readonly why: Refusal; readonly where?: string }

/**
 * CONTRACT 4.6: an interrogation run reads the image and makes its HTTP requests on a thread of its
 * own, so that the thread that delivers every other webhook's live batches does not do that work.
 * Measured (bench `interrogation-1m`, 1,000,000 points while 5,000 points/s go to five other
 * webhooks): with the reading and the requests on the delivering thread the others' p99 rose
 * 1.33–1.37×; with only the reading moved, 1.31×; with only the requests moved, 1.31×; with both
 * here, 1.11×. The lane on the main thread still decides everything about each request — its
 * order, rate cap turn, retries, circuit, 410, backlog — and keeps its spans: the thread reads the
 * next request when asked and sends a request when asked, answering with the status. The bodies
 * stay here (sent to the main thread and back, each was promoted there: its heap peaked 35 MB
 * higher); the lane takes one only for the backlog.
 */
export interface ThreadInit {
  /** The image connection's options (plain data: Sentinel, TLS material, password). */
  readonly redis: RedisOptions;
  readonly retrySeconds: number;
  /** The webhook: URL, headers, secrets, filter, settings, and what its files held. */
  readonly subscription: ClientSubscription;
  readonly userAgent: string;
  readonly cause: InterrogationCause;
  /** The run's `P`: its requests' `webhook-id`s are `gi-{P}-{k}` (`pi-` when periodic). */
  readonly p: string;
  readonly maxSize: number;
}

export type ToThread =
  | { readonly t: 'next' }
  | { readonly t: 'post'; readonly id: number; readonly webhookId: string; readonly traceparent?: string }
  | { readonly t: 'abort'; readonly id: number }
  | { readonly t: 'take'; readonly webhookId: string };

export type ThreadLogLevel = 'info' | 'warn' | 'error';

export type FromThread =
  | { readonly t: 'points'; readonly request: ThreadRequest }
  | { readonly t: 'body'; readonly webhookId: string; readonly body: null }
  | { readonly t: 'body'; readonly webhookId: string; readonly body: string; readonly contentType: string }
  | { readonly t: 'end' }
  | { readonly t: 'error'; readonly error: string }
  | { readonly t: 'answer'; readonly id: number; readonly status: number; readonly retryAfter?: string }
  | { readonly t: 'failed'; readonly id: number; readonly error: string; readonly refused?: RefusedConnection }
  | { readonly t: 'log'; readonly level: ThreadLogLevel; readonly fields: Record<string, unknown>; readonly msg: string };

/** The thread's module, beside this one in the build. */
export const IMAGE_THREAD_FILE = join(__dirname, 'imageThreadMain.js');

/**
 * The thread's young generation, in MB. V8 would size it as for the main thread (up to 48 MB here)
 * and fill it; in one-round runs of 1,000,000 points under load, 8 MB and the default took the same
 * time and 8 MB 16 MB less memory (4 MB, tried with other changes, was slower).
 */
const YOUNG_MB = 8;

export interface ImageThreadOptions {
  readonly file?: string;
  /** What the thread logs (its image connection's failures). */
  readonly log: (level: ThreadLogLevel, fields: Record<string, unknown>, msg: string) => void;
  /** A request's `process` span, when tracing is on. */
  readonly trace?: (batch: Batch) => DeliveryTrace | undefined;
}

interface Pending {
  answer(a: WebhookResponse): void;
  fail(err: Error): void;
}

/** Starts a thread for one run. A thread that dies fails what waits on it; the lane begins the run again. */
export const imageThread = (init: ThreadInit, o: ImageThreadOptions): ImageThread => {
  const worker = new Worker(o.file ?? IMAGE_THREAD_FILE, { workerData: init, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB } });
  const reads: Array<{ resolve: (r: ThreadRequest | null) => void; reject: (e: Error) => void }> = [];
  const takes = new Map<string, { resolve: (body: TakenBody) => void; reject: (e: Error) => void }>();
  const posts = new Map<number, Pending>();
  let seq = 0;
  let dead: Error | undefined;
  const die = (err: Error): void => {
    dead ??= err;
    for (const r of reads.splice(0)) r.reject(dead);
    for (const t of takes.values()) t.reject(dead);
    takes.clear();
    // taken out of the map first: a request's teardown then finds nothing left to cut
    const waiting = [...posts.values()];
    posts.clear();
    for (const p of waiting) p.fail(dead);
  };
  /** The request `id` waits no more: out of the map, for its answer or failure. */
  const settle = (id: number): Pending | undefined => {
    const p = posts.get(id);
    posts.delete(id);
    return p;
  };
  worker.on('message', (m: FromThread) => {
    switch (m.t) {
      case 'points':
        return reads.shift()?.resolve(m.request);
      case 'body': {
        const t = takes.get(m.webhookId);
        takes.delete(m.webhookId);
        return m.body === null ? t?.reject(new Error(`the body of ${m.webhookId} is gone`)) : t?.resolve({ body: m.body, contentType: m.contentType });
      }
      case 'end':
        return reads.shift()?.resolve(null);
      case 'error':
        return reads.shift()?.reject(new Error(m.error));
      case 'answer':
        return settle(m.id)?.answer(m.retryAfter === undefined ? { status: m.status } : { status: m.status, retryAfter: m.retryAfter });
      case 'failed':
        // a connection the rule refused stays that (CONTRACT 6.7: never retried) across the thread's edge
        return settle(m.id)?.fail(m.refused === undefined ? new Error(m.error) : new NetworkRefused(m.refused.address, m.refused.why, m.refused.where));
      case 'log':
        return o.log(m.level, m.fields, m.msg);
    }
  });
  worker.on('error', (err: Error) => die(new Error(`interrogation thread failed: ${err.message}`)));
  worker.on('exit', (code) => die(new Error(`interrogation thread ended (exit code ${code})`)));
  const send = (m: ToThread) => worker.postMessage(m);
  return {
    next: () =>
      dead !== undefined
        ? Promise.reject(dead)
        : new Promise((resolve, reject) => {
            reads.push({ resolve, reject });
            send({ t: 'next' });
          }),
    post: (batch) =>
      new Observable<WebhookResponse>((subscriber) => {
        if (dead !== undefined) {
          subscriber.error(dead);
          return;
        }
        const id = ++seq;
        const trace = o.trace?.(batch);
        const call = trace?.call();
        const end = (outcome: { status?: number; error?: string }) => {
          call?.end(outcome);
          trace?.end(outcome);
        };
        posts.set(id, {
          answer: (a) => {
            end({ status: a.status });
            subscriber.next(a);
            subscriber.complete();
          },
          fail: (err) => {
            end({ error: err.message });
            subscriber.error(err);
          },
        });
        const traceparent = call?.traceparent;
        send({ t: 'post', id, webhookId: batch.webhookId, ...(traceparent !== undefined ? { traceparent } : {}) });
        return () => {
          if (settle(id) === undefined) return;
          end({ error: 'cancelled' });
          if (dead === undefined) send({ t: 'abort', id });
        };
      }),
    take: (webhookId) =>
      dead !== undefined
        ? Promise.reject(dead)
        : new Promise((resolve, reject) => {
            takes.set(webhookId, { resolve, reject });
            send({ t: 'take', webhookId });
          }),
    close: () => {
      dead ??= new Error('interrogation thread closed');
      void worker.terminate();
    },
  };
};
