import axios, { type AxiosInstance } from 'axios';
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Readable } from 'node:stream';
import { Observable } from 'rxjs';
import type { Webhook } from '../../config/webhookSettings';
import type { Batch } from '../read/batches';
import type { PostBatch, WebhookResponse } from './answers';
import { oauth2Tokens } from './oauth2';
import type { WebhookSubscription } from './subscription';
import { requestBody, type Body } from './body';
import { safeUrl } from '../../config/urls';
import { timedBody } from '../../telemetry/bodyTime';
import { guardedAgents, refusedByRule } from './agents';
import type { DeliveryTrace, Tracing } from '../../telemetry/tracing';

/**
 * CONTRACT 6.4 (Standard Webhooks): `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, one
 * per secret, separated by spaces, so that a receiver holding either the old or the new secret
 * verifies during a rotation.
 */
export const signatureKey = (secret: string): Buffer =>
  secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');

export const sign = (secret: string, webhookId: string, timestamp: number, body: string | Uint8Array): string =>
  `v1,${createHmac('sha256', signatureKey(secret)).update(`${webhookId}.${timestamp}.`).update(body).digest('base64')}`;

/** The headers of a request; the signature is over the bytes sent (the HMAC of the text's UTF-8, as CONTRACT 6.4 says). */
export const requestHeaders = (webhook: Webhook, batch: Batch, body: Body, timestamp: number, userAgent: string): Record<string, string> => ({
  ...webhook.headers,
  'Content-Type': body.contentType,
  'User-Agent': userAgent,
  'webhook-id': batch.webhookId,
  'webhook-timestamp': String(timestamp),
  // CONTRACT 4.7: why a request that is not a live batch was sent, whatever the format
  ...(batch.cause !== undefined ? { 'Webhook-Cause': batch.cause } : {}),
  ...(webhook.compression === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
  ...(webhook.secrets.length > 0 ? { 'webhook-signature': webhook.secrets.map((s) => sign(s, batch.webhookId, timestamp, body.bytes)).join(' ') } : {}),
});

const gzipped = new WeakMap<Buffer, Buffer>();
/** The bytes a request carries: the body, compressed once when the webhook says gzip (CONTRACT 4.7; signed before). */
export const payloadOf = (webhook: Webhook, body: Body): Buffer => {
  if (webhook.compression !== 'gzip') return body.bytes;
  let z = gzipped.get(body.bytes);
  if (z === undefined) gzipped.set(body.bytes, (z = timedBody('gzip', () => gzipSync(body.bytes))));
  return z;
};

/** How much of a receiver's answer body is read (and thrown away) before the connection is cut. */
export const MAX_ANSWER_BODY_BYTES = 4096;

export interface WebhookClient {
  readonly post: PostBatch;
  /**
   * A request whose spans another thread keeps (an interrogation's, `src/runtime/interrogation/imageThread.ts`):
   * `traceparent`, when given, goes out as the context of the caller's client span.
   */
  postAs(batch: Batch, traceparent: string | undefined): ReturnType<PostBatch>;
  close(): void;
}

/** CONTRACT 9: spans for each request, when tracing is on; `group` is the consumer group that read the entries. */
export interface ClientTracing {
  readonly tracing: Tracing;
  readonly group: string;
}

/** The `process process:updates` span of one request (CONTRACT 9), linked to its entries' contexts; none without tracing. */
export const deliveryTraces = (sub: Pick<WebhookSubscription, 'index' | 'webhook'>, traced: ClientTracing | undefined): ((batch: Batch) => DeliveryTrace | undefined) => {
  if (traced === undefined) return () => undefined;
  const spanUrl = safeUrl(sub.webhook.url);
  return (batch) => traced.tracing.delivery({
    webhook: sub.index, url: spanUrl, webhookId: batch.webhookId, group: traced.group,
    points: batch.size, entries: batch.traces ?? [],
  });
};

export type ClientSubscription = Pick<WebhookSubscription, 'index' | 'webhook' | 'settings' | 'files'>;

/**
 * A subscription's own client (CONTRACT 4.2, 6.5): axios on keep-alive agents of its own (a
 * webhook's connections and TLS settings are its own), one request per attempt.
 * `timeoutMs` bounds the whole attempt — connecting, the answer's headers and its body — so a
 * receiver that dribbles bytes cannot hold a request slot for ever. The answer body is streamed,
 * never buffered: a small one is read to its end and thrown away (the connection is then reused);
 * past a few KB, or at the deadline after the status came, the connection is cut and the status
 * counts. Aborted when the subscriber unsubscribes (graceful-stop deadline). Any HTTP status is an
 * answer (the lane classifies it); redirects are not followed, so a 3xx is an answer too.
 */
export const webhookClient = (sub: ClientSubscription, userAgent: string, now: () => number = Date.now, traced?: ClientTracing): WebhookClient => {
  const { webhook } = sub;
  const deliveryTrace = deliveryTraces(sub, traced);
  const timeoutMs = sub.settings.timeoutMs;
  const allowed = sub.settings.allowedNetworks ?? [];
  // CONTRACT 4.5: the webhook's own CA, client certificate and server name, when it has them;
  // CONTRACT 6.7: every connection's address checked
  const agents = guardedAgents(allowed, { http: { maxSockets: 64 }, https: { maxSockets: 64, ...(sub.files.tls ?? {}) } });
  const { httpAgent, httpsAgent } = agents;
  const o2 = webhook.auth?.oauth2;
  const tokens = o2 === undefined ? undefined : oauth2Tokens(o2, sub.files.oauth2?.clientSecret ?? '', sub.files.oauth2?.ca, timeoutMs, Date.now, allowed);
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
  const postAs = (batch: Batch, parent: string | undefined): ReturnType<PostBatch> =>
    new Observable((subscriber) => {
      const controller = new AbortController();
      let answerBody: Readable | undefined;
      let answer: WebhookResponse | undefined;
      /** The exchange is over (answered, its body read or cut): nothing is left to abort. */
      let over = false;
      const finish = () => {
        clearTimeout(deadline);
        if (answer !== undefined && !subscriber.closed) {
          over = true;
          endTrace({ status: answer.status });
          subscriber.next(answer);
          subscriber.complete();
        }
      };
      const deadline = setTimeout(() => {
        if (answer !== undefined) {
          answerBody?.destroy();
          finish();
        } else controller.abort();
      }, timeoutMs);
      const timestamp = Math.floor(now() / 1000);
      // the body the batch carries (its webhook's format, rendered once by the lane), or its default one
      const body = requestBody(batch);
      const own = requestHeaders(webhook, batch, body, timestamp, userAgent);
      const payload = payloadOf(webhook, body);
      const headers = parent === undefined ? own : { ...own, traceparent: parent };
      const trace = parent === undefined ? deliveryTrace(batch) : undefined;
      let traceOpen = trace !== undefined;
      const endTrace = (o: { status?: number; error?: string }) => {
        if (traceOpen) trace!.end(o);
        traceOpen = false;
      };
      const plain = (authorization?: string) =>
        client.post(webhook.url, payload, { headers: authorization === undefined ? headers : { ...headers, Authorization: authorization }, signal: controller.signal });
      /** With tracing: a client span per HTTP request, its context sent as `traceparent` (when sampled). */
      const send = trace === undefined ? plain : async (authorization?: string) => {
        const call = trace.call();
        const withTrace = call.traceparent === undefined ? headers : { ...headers, traceparent: call.traceparent };
        const auth = authorization === undefined ? withTrace : { ...withTrace, Authorization: authorization };
        return client.post(webhook.url, payload, { headers: auth, signal: controller.signal }).then(
          (r) => (call.end({ status: r.status }), r),
          (err: unknown) => {
            call.end({ error: err instanceof Error ? describeError(err) : String(err) });
            throw err;
          },
        );
      };
      /**
       * With OAuth 2.0: the current token; a 401 discards it and the request goes again at once
       * with a new one — once, inside this attempt (CONTRACT 4.5). A token that cannot be had
       * fails the attempt as a network error does.
       */
      const exchange = async () => {
        if (tokens === undefined) return send();
        // the attempt's deadline (or a stop) also ends a wait for a token
        const cut = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(new Error('timeout')), { once: true }));
        cut.catch(() => undefined);
        const token = await Promise.race([tokens.get(), cut]);
        const first = await send(`Bearer ${token}`);
        if (first.status !== 401) return first;
        (first.data as Readable).destroy();
        tokens.discard(token);
        return send(`Bearer ${await Promise.race([tokens.get(), cut])}`);
      };
      exchange()
        .then(
          (r) => {
            const retryAfter = r.headers['retry-after'];
            answer = { status: r.status, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
            answerBody = r.data as Readable;
            let read = 0;
            answerBody.on('data', (chunk: Buffer) => {
              read += chunk.length;
              if (read > MAX_ANSWER_BODY_BYTES) {
                answerBody!.destroy();
                finish();
              }
            });
            answerBody.once('end', finish);
            answerBody.once('error', finish);
            answerBody.once('close', finish);
          },
          (err: unknown) => {
            clearTimeout(deadline);
            // a connection the network rule refused goes on as itself: the lane refuses the batch (CONTRACT 6.7)
            const reported = refusedByRule(err) ?? (err instanceof Error ? new Error(controller.signal.aborted && answer === undefined ? 'timeout' : describeError(err)) : err);
            endTrace({ error: reported instanceof Error ? reported.message : String(reported) });
            subscriber.error(reported);
          },
        );
      return () => {
        clearTimeout(deadline);
        answerBody?.destroy();
        // only an exchange cut short (a stop's deadline) is aborted: an abort makes an AbortError
        // and runs axios's listeners, for nothing once the answer is in
        if (!over) controller.abort();
        endTrace({ error: 'cancelled' });
      };
    });
  return {
    post: (batch) => postAs(batch, undefined),
    postAs,
    close: () => {
      agents.close();
      tokens?.close();
    },
  };
};

/**
 * TLS failures by what they mean to an operator (CONTRACT 4.5): from the error's code (a
 * certificate the client refused: `CERT_HAS_EXPIRED`, …) or, for an alert the server sent, from
 * OpenSSL's words in the message (Node gives those the code `EPROTO`: `… tlsv13 alert certificate
 * required …`, `… sslv3 alert bad certificate …`).
 */
const TLS_REASONS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?)$/, 'unknown CA'],
  [/^ERR_TLS_CERT_ALTNAME_INVALID$/, 'name mismatch'],
  [/^CERT_HAS_EXPIRED$/, 'certificate expired'],
  [/^CERT_NOT_YET_VALID$/, 'certificate not yet valid'],
  [/CERTIFICATE_REQUIRED|ALERT_HANDSHAKE_FAILURE|alert certificate required|alert handshake failure/i, 'certificate required (the server asks for a client certificate)'],
  [/ALERT_(BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|DECRYPT_ERROR)|alert (bad certificate|unknown ca|certificate unknown|decrypt error)/i, 'the server refused our client certificate'],
  [/ALERT_CERTIFICATE_EXPIRED|alert certificate expired/i, 'the server found our client certificate expired'],
];

export const describeError = (err: Error): string => {
  const code = (err as Error & { code?: string }).code;
  if (code === 'ECONNABORTED' || code === 'ETIMEDOUT') return 'timeout';
  const byCode = code === undefined ? undefined : TLS_REASONS.find(([re]) => re.test(code));
  // an alert from the server: EPROTO (or another code) with OpenSSL's words in the message
  const tls = byCode ?? (code === 'EPROTO' || /SSL routines/.test(err.message) ? TLS_REASONS.find(([re]) => re.test(err.message)) : undefined);
  if (tls !== undefined) return `TLS: ${tls[1]} (${code ?? 'TLS'})`;
  return code !== undefined ? `network error ${code}` : err.message;
};
