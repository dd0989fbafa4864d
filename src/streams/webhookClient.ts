import axios, { type AxiosInstance } from 'axios';
import { createHmac } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Readable } from 'node:stream';
import { Observable } from 'rxjs';
import type { Webhook } from '../config/managed';
import type { Batch } from './batches';
import type { PostBatch, WebhookResponse } from './answers';
import type { Subscription } from './subscription';

/**
 * CONTRACT 6.4 (Standard Webhooks): `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, one
 * per secret, separated by spaces, so that a receiver holding either the old or the new secret
 * verifies during a rotation.
 */
export const signatureKey = (secret: string): Buffer =>
  secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');

export const sign = (secret: string, webhookId: string, timestamp: number, body: string): string =>
  `v1,${createHmac('sha256', signatureKey(secret)).update(`${webhookId}.${timestamp}.${body}`).digest('base64')}`;

export const requestHeaders = (webhook: Webhook, batch: Batch, timestamp: number, userAgent: string): Record<string, string> => ({
  ...webhook.headers,
  'Content-Type': 'application/json',
  'User-Agent': userAgent,
  'webhook-id': batch.webhookId,
  'webhook-timestamp': String(timestamp),
  ...(webhook.secrets.length > 0 ? { 'webhook-signature': webhook.secrets.map((s) => sign(s, batch.webhookId, timestamp, batch.body)).join(' ') } : {}),
});

/** How much of a receiver's answer body is read (and thrown away) before the connection is cut. */
export const MAX_ANSWER_BODY_BYTES = 4096;

/** A batch goes to every webhook as the same object: its body is encoded once, not per request. */
const encoded = new WeakMap<Batch, Buffer>();
const bytesOf = (batch: Batch): Buffer => {
  let bytes = encoded.get(batch);
  if (bytes === undefined) encoded.set(batch, (bytes = Buffer.from(batch.body, 'utf8')));
  return bytes;
};

export interface WebhookClient {
  readonly post: PostBatch;
  close(): void;
}

/**
 * A subscription's own client (CONTRACT 4.2, 6.5): axios on keep-alive agents of its own (a
 * webhook's connections, and later its TLS settings, are its own), one request per attempt.
 * `timeoutMs` bounds the whole attempt — connecting, the answer's headers and its body — so a
 * receiver that dribbles bytes cannot hold a request slot for ever. The answer body is streamed,
 * never buffered: a small one is read to its end and thrown away (the connection is then reused);
 * past a few KB, or at the deadline after the status came, the connection is cut and the status
 * counts. Aborted when the subscriber unsubscribes (graceful-stop deadline). Any HTTP status is an
 * answer (the lane classifies it); redirects are not followed, so a 3xx is an answer too.
 */
export const webhookClient = (sub: Pick<Subscription, 'webhook' | 'settings'>, userAgent: string, now: () => number = Date.now): WebhookClient => {
  const { webhook } = sub;
  const timeoutMs = sub.settings.timeoutMs;
  const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 64 });
  const client: AxiosInstance = axios.create({
    timeout: timeoutMs,
    httpAgent,
    httpsAgent,
    maxRedirects: 0,
    validateStatus: () => true,
    responseType: 'stream',
    // The body is serialised once per batch; axios would otherwise parse and re-check it per request.
    transformRequest: [(d: unknown) => d],
    transformResponse: [(d: unknown) => d],
    decompress: false,
    proxy: false,
  });
  const post: PostBatch = (batch) =>
    new Observable((subscriber) => {
      const controller = new AbortController();
      let body: Readable | undefined;
      let answer: WebhookResponse | undefined;
      /** The exchange is over (answered, its body read or cut): nothing is left to abort. */
      let over = false;
      const finish = () => {
        clearTimeout(deadline);
        if (answer !== undefined && !subscriber.closed) {
          over = true;
          subscriber.next(answer);
          subscriber.complete();
        }
      };
      const deadline = setTimeout(() => {
        if (answer !== undefined) {
          body?.destroy();
          finish();
        } else controller.abort();
      }, timeoutMs);
      const timestamp = Math.floor(now() / 1000);
      client
        .post(webhook.url, bytesOf(batch), { headers: requestHeaders(webhook, batch, timestamp, userAgent), signal: controller.signal })
        .then(
          (r) => {
            const retryAfter = r.headers['retry-after'];
            answer = { status: r.status, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
            body = r.data as Readable;
            let read = 0;
            body.on('data', (chunk: Buffer) => {
              read += chunk.length;
              if (read > MAX_ANSWER_BODY_BYTES) {
                body!.destroy();
                finish();
              }
            });
            body.once('end', finish);
            body.once('error', finish);
            body.once('close', finish);
          },
          (err: unknown) => {
            clearTimeout(deadline);
            subscriber.error(err instanceof Error ? new Error(controller.signal.aborted && answer === undefined ? 'timeout' : describeError(err)) : err);
          },
        );
      return () => {
        clearTimeout(deadline);
        body?.destroy();
        // only an exchange cut short (a stop's deadline) is aborted: an abort makes an AbortError
        // and runs axios's listeners, for nothing once the answer is in
        if (!over) controller.abort();
      };
    });
  return {
    post,
    close: () => {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
};

const describeError = (err: Error): string => {
  const code = (err as Error & { code?: string }).code;
  if (code === 'ECONNABORTED' || code === 'ETIMEDOUT') return 'timeout';
  return code !== undefined ? `network error ${code}` : err.message;
};
