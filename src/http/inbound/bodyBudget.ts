import type { IncomingMessage, ServerResponse } from 'node:http';

export type BodyResult =
  | { readonly ok: true; readonly text: string; readonly bytes: Buffer }
  | { readonly ok: false; readonly reason: 'too_large' | 'aborted' | 'busy' };

/**
 * The bytes of request bodies held at once, over all requests (CONTRACT 6.5,
 * `Http:MaxBodyBytesInFlight`): a request that would pass it is answered 503 instead of read.
 */
export interface BodyBudget {
  take(bytes: number): boolean;
  give(bytes: number): void;
  readonly inUse: () => number;
}

export const makeBodyBudget = (limit: number): BodyBudget => {
  let used = 0;
  return {
    take: (bytes) => {
      if (used + bytes > limit) return false;
      used += bytes;
      return true;
    },
    give: (bytes) => {
      used = Math.max(0, used - bytes);
    },
    inUse: () => used,
  };
};

/** `application/json`, with parameters such as `charset=utf-8` allowed (CONTRACT 5.1). */
export const isJsonMediaType = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json';
};

/**
 * Reads the body as UTF-8 text, refusing it as soon as it passes `limit` bytes: by
 * `Content-Length` before a byte is read, or while reading a chunked body.
 */
export const readBody = (req: IncomingMessage, res: ServerResponse, limit: number, budget?: BodyBudget): Promise<BodyResult> => {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ ok: false, reason: 'too_large' });
  // the budget is held until the answer is sent: the body's text lives that long
  let held = 0;
  const hold = (bytes: number): boolean => {
    if (budget === undefined) return true;
    if (!budget.take(bytes)) return false;
    if (held === 0) res.once('close', () => budget.give(held));
    held += bytes;
    return true;
  };
  if (Number.isFinite(declared) && declared > 0 && !hold(declared)) return Promise.resolve({ ok: false, reason: 'busy' });
  const reserved = Number.isFinite(declared) ? declared : 0;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (r: BodyResult) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onError);
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        done({ ok: false, reason: 'too_large' });
        return;
      }
      // a body without Content-Length (chunked) takes from the budget as it arrives
      if (size > reserved && !hold(Math.min(chunk.length, size - reserved))) {
        req.pause();
        done({ ok: false, reason: 'busy' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      done({ ok: true, text: bytes.toString('utf8'), bytes });
    };
    const onError = () => done({ ok: false, reason: 'aborted' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onError);
  });
};
