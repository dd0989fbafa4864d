import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
  /** What the receiver answered (0: it never answered). */
  status: number;
}

export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

/** A webhook receiver: a node:http server whose answers are scripted per request number. */
export class Receiver {
  readonly requests: Received[] = [];
  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(answer: (n: number, r: Received) => Answer = () => ({ status: 200 })): Promise<Receiver> {
    let self: Receiver | undefined;
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const r: Received = { headers: req.headers, body: Buffer.concat(parts).toString('utf8'), at: Date.now(), status: 0 };
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
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
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
