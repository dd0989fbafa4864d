import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The bytes as they came (a compressed body stays compressed). */
  readonly raw: Buffer;
  readonly at: number;
  /** What the receiver answered (0: it never answered). */
  status: number;
  /** Over https: the client certificate's CN, when the client sent one. */
  readonly clientCn?: string | undefined;
}

export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

/** A webhook receiver: a node:http server whose answers are scripted per request number. */
export class Receiver {
  readonly requests: Received[] = [];
  private constructor(private readonly server: Server, readonly url: string) {}

  /**
   * `tls`: an https receiver with these server options (e.g. one that requires a client certificate);
   * `host`: the loopback address it listens on, and its URL names (127.0.0.1 unless given).
   */
  static async start(answer: (n: number, r: Received) => Answer = () => ({ status: 200 }), tls?: HttpsOptions, host = '127.0.0.1'): Promise<Receiver> {
    let self: Receiver | undefined;
    const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const peer = tls === undefined ? undefined : (req.socket as TLSSocket).getPeerCertificate?.();
        const clientCn = peer !== undefined && peer !== null && 'subject' in peer && peer.subject !== undefined ? String(peer.subject.CN) : undefined;
        const raw = Buffer.concat(parts);
        const r: Received = { headers: req.headers, body: raw.toString('utf8'), raw, at: Date.now(), status: 0, clientCn };
        self!.requests.push(r);
        const a = answer(self!.requests.length, r);
        if (a === 'hang') return;
        const reply = () => {
          r.status = a.status;
          res.writeHead(a.status, a.headers).end();
        };
        if (a.delayMs === undefined) reply();
        else setTimeout(reply, a.delayMs);
      });
    };
    const server: Server = tls === undefined ? createServer(handler) : (createHttpsServer(tls, handler) as unknown as Server);
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    self = new Receiver(server, `${tls === undefined ? 'http' : 'https'}://${host}:${(server.address() as AddressInfo).port}/hook`);
    return self;
  }

  /** Requests answered 2xx. */
  delivered(): Received[] {
    return this.requests.filter((r) => r.status >= 200 && r.status < 300);
  }

  /** Data points of the delivered requests, in arrival order. */
  points(): Array<Record<string, unknown>> {
    return this.delivered().flatMap((r) => (JSON.parse(r.body) as { datapoints: Array<Record<string, unknown>> }).datapoints);
  }

  /** Points de-duplicated by webhook-id, as a receiver following the README would. */
  pointsDeduplicated(): Array<Record<string, unknown>> {
    const seen = new Set<string>();
    return this.delivered()
      .filter((r) => {
        const id = String(r.headers['webhook-id']);
        if (seen.has(id)) return false;
        seen.add(id);
        return true;
      })
      .flatMap((r) => (JSON.parse(r.body) as { datapoints: Array<Record<string, unknown>> }).datapoints);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
