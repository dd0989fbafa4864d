import { parentPort, workerData } from 'node:worker_threads';
import type { Subscription } from 'rxjs';
import { classifyResponse } from '../../streams/webhook/answers';
import { imageReader, sortInPlace, type ImageReader } from '../../streams/image/image';
import { interrogationBatch } from '../../streams/webhook/interrogation';
import type { Batch } from '../../streams/read/batches';
import { webhookClient } from '../../streams/webhook/client';
import { refusedByRule } from '../../streams/webhook/agents';
import { bodyText, formatOf, prepareBody, requestBody, withBody } from '../../streams/webhook/body';
import { bodyPool } from './bodyPool';
import { incrementalCollector } from '../collector';
import { connectDatastore, type DatastoreLog } from '../datastore';
import type { FromThread, ThreadInit, ThreadLogLevel, ToThread } from './imageThread';

/**
 * The thread of one interrogation run (`imageThread.ts`): its own image connection and webhook
 * client; it reads the next request when asked and makes a request when asked. It decides nothing:
 * every rule of the webhook is applied by the lane on the main thread.
 */
const port = parentPort;
if (port === null) throw new Error('imageThreadMain runs as a worker thread only');
const init = workerData as ThreadInit;
const reply = (m: FromThread) => port.postMessage(m);
const logAs = (level: ThreadLogLevel) => (fields: Record<string, unknown>, msg: string) => reply({ t: 'log', level, fields, msg });
const log: DatastoreLog = { info: logAs('info'), warn: logAs('warn'), error: logAs('error') };

const store = connectDatastore(init.redis, init.retrySeconds, log, 'image-reader');
const client = webhookClient(init.subscription, init.userAgent);
const format = formatOf(init.subscription.webhook, init.subscription.settings.maxBodyBytes);
/**
 * A full collection (incremental) every 200,000 keys scanned and once the scan is done: what the
 * scan's replies left. None while the requests are read and sent: with the values read as bytes
 * and the bodies' memory used again (`bodyPool.ts`) little is left behind, and one every 10,000
 * points (what the reading as strings needed) cost about a quarter of the run's CPU (measured for
 * 1,000,000 points without load: 10.8–13.6 s of CPU with it, 8.3–10.3 s without; bench/README.md).
 */
const collect = incrementalCollector();
const bodies = bodyPool();
let reader: ImageReader | undefined;
const posts = new Map<number, Subscription>();
/**
 * The requests read and not yet answered 2xx or taken for the backlog, by `webhook-id`: each one
 * object, with its body made once, ahead (`withBody`), however often it is sent.
 */
const requests = new Map<string, Batch>();
let k = 0;
/** The next request, read while the lane has the previous one: a request slot that frees finds it ready. */
let ahead: Promise<FromThread> | undefined;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

const next = async (): Promise<FromThread> => {
  if (reader === undefined) {
    await store.ready();
    // this thread holds no one up: the addresses are sorted in place, without a second array
    reader = imageReader(store.client, init.subscription.webhook.filter, init.maxSize, { collect, sort: sortInPlace });
  }
  for (;;) {
    const points = await reader.next();
    if (points === null) return { t: 'end' };
    const batch = interrogationBatch(init.cause, init.p, ++k, points);
    // its body made now (the default one in the pool's memory): the points' buffers go, the body
    // stays until it is answered 2xx or taken
    const prepared = await prepareBody(format, batch, bodies.alloc);
    // CONTRACT 4.7: nothing to send for these points (all left out, or JSONata's nothing): the next ones
    if (prepared.kind === 'nothing') continue;
    // one that cannot be rendered is kept with the default body, which the lane takes for the backlog
    const request = withBody(batch, prepared.kind === 'body' ? prepared.body : requestBody(batch, bodies.alloc));
    requests.set(request.webhookId, request);
    const size = points.length;
    return { t: 'points', request: prepared.kind === 'failed' ? { size, renderError: prepared.error } : prepared.skipped > 0 ? { size, skipped: prepared.skipped } : { size } };
  }
};

port.on('message', (m: ToThread) => {
  switch (m.t) {
    case 'next': {
      // the one read ahead, if any, is this one; the following one is begun once it is answered
      const current = ahead ?? next();
      ahead = undefined;
      current.then(
        (read) => {
          reply(read);
          if (read.t === 'points') {
            ahead = next();
            ahead.catch(() => undefined); // reported when asked for
          }
        },
        (err: unknown) => reply({ t: 'error', error: message(err) }),
      );
      return;
    }
    case 'post': {
      const batch = requests.get(m.webhookId);
      if (batch === undefined) {
        reply({ t: 'failed', id: m.id, error: `the body of ${m.webhookId} is gone` });
        return;
      }
      const sub = client.postAs(batch, m.traceparent).subscribe({
        next: (a) => {
          posts.delete(m.id);
          // delivered: the request is done (the lane never sends it again), its memory free for another
          if (classifyResponse(a, Date.now()).ok && requests.delete(m.webhookId)) bodies.release(requestBody(batch).bytes);
          reply(a.retryAfter === undefined ? { t: 'answer', id: m.id, status: a.status } : { t: 'answer', id: m.id, status: a.status, retryAfter: a.retryAfter });
        },
        error: (err: unknown) => {
          posts.delete(m.id);
          const refused = refusedByRule(err);
          reply(refused === undefined
            ? { t: 'failed', id: m.id, error: message(err) }
            : { t: 'failed', id: m.id, error: message(err), refused: { address: refused.address, why: refused.why, ...(refused.where !== undefined ? { where: refused.where } : {}) } });
        },
      });
      if (!sub.closed) posts.set(m.id, sub);
      return;
    }
    case 'abort':
      posts.get(m.id)?.unsubscribe();
      posts.delete(m.id);
      return;
    case 'take': {
      const batch = requests.get(m.webhookId);
      const body = batch === undefined ? undefined : requestBody(batch);
      reply(body === undefined ? { t: 'body', webhookId: m.webhookId, body: null } : { t: 'body', webhookId: m.webhookId, body: bodyText(body), contentType: body.contentType });
      requests.delete(m.webhookId);
      return;
    }
  }
});
