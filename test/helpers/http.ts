import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  json(): any;
}

/**
 * A plain node:http request: full control over headers, chunked bodies (pass `chunks`), and
 * what a client sees when the server aborts (rejects with the socket error).
 */
export const request = (
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; chunks?: string[] } = {},
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('response aborted')));
      res.on('end', () => {
        if (!res.complete) return reject(new Error('response incomplete'));
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
      });
    });
    req.on('error', reject);
    if (options.chunks) {
      for (const c of options.chunks) req.write(c);
      req.end();
    } else req.end(options.body);
  });

export const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
