import { createServer, type Server, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { eventually } from './helpers/cli';
import { request } from './helpers/http';
import { pendingCount, usePushHarness } from './helpers/push';

import { tally } from './helpers/tally';

/**
 * Issue 12, cases 1 and 2: webhook receivers that misbehave on purpose (a few lines of node:net)
 * cannot grow the outbound connector's memory, block its event loop or hold its request slots.
 */
let client: Redis;
const h = usePushHarness();
beforeAll(() => {
  ({ client } = h.r);
});

/** A raw TCP receiver; `onConnection` scripts what it does. */
const hostile = async (onConnection: (s: Socket) => void): Promise<{ url: string; server: Server; sockets: Set<Socket> }> => {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    onConnection(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, server, sockets };
};
const closeHostile = (x: { server: Server; sockets: Set<Socket> }) => {
  for (const s of x.sockets) s.destroy();
  return new Promise((resolve) => x.server.close(resolve));
};
const rssMb = (pid: number) => Number(/^VmRSS:\s+(\d+)/m.exec(require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8') as string)?.[1]) / 1024;

it('case 1: a receiver that answers 200 and then streams an endless body neither grows the connector nor blocks it; the 200 counts', async () => {
  let sent = 0;
  const endless = await hostile((s) => {
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n');
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = () => {
        while (!s.destroyed && s.write(chunk)) sent += chunk.length;
        if (!s.destroyed) s.once('drain', pump);
      };
      pump();
    });
  });
  try {
    const healthy = await h.receiver();
    const { c, base } = await h.outbound('endless', [{ url: endless.url }, { url: healthy.url }], { Webhooks__TimeoutMilliseconds: '2000' });
    const before = rssMb(c.proc.pid!);
    await h.produce(0, 100);
    await eventually(() => (tally(healthy).seqs.size === 100 ? true : undefined));
    await eventually(async () => ((await pendingCount(client, 'endless')) === 0 ? true : undefined), 20000, 'acknowledged: the 200 counted');
    for (let i = 0; i < 5; i++) expect((await request(`${base}/health/live`)).status).toBe(200);
    expect(rssMb(c.proc.pid!) - before).toBeLessThan(50);
    expect(sent).toBeLessThan(50 * 1024 * 1024); // the connector cut it short
    expect((await request(`${base}/metrics`)).text).toMatch(/^webhook_deliveries_total\{webhook="0",host="[^"]+",outcome="delivered"\} [1-9]/m);
  } finally {
    await closeHostile(endless);
  }
});

it('case 2: a receiver that dribbles a byte at a time is cut at TimeoutMilliseconds for the whole attempt, retried, then put in the backlog', async () => {
  const timers = new Set<NodeJS.Timeout>();
  const dribbler = await hostile((s) => {
    s.once('data', () => {
      // a valid answer, one byte at a time, whose last header never ends
      const text = 'HTTP/1.1 200 OK\r\nX-Slow: ';
      let i = 0;
      const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(i < text.length ? text[i++]! : 'a')), 100);
      timers.add(t);
    });
  });
  try {
    const healthy = await h.receiver();
    void healthy;
    const { c } = await h.outbound('dribble', [{ url: dribbler.url }, { url: healthy.url }], { Webhooks__TimeoutMilliseconds: '600', Webhooks__MaxAttempts: '2' });
    await h.produce(0, 20);
    // read, attempted twice (0.6 s each), put in the backlog, then acknowledged
    const dead = await eventually(async () => {
      const entries = (await client.exists('connectors:dribble:deadletter')) ? await client.xrange('connectors:dribble:deadletter', '-', '+') : [];
      return entries.length > 0 ? entries : undefined;
    }, 20000, 'put in the backlog');
    await eventually(async () => ((await pendingCount(client, 'dribble')) === 0 ? true : undefined), 20000, 'acknowledged');
    expect(dead.map(([, f]) => f[f.indexOf('error') + 1])).toContain('timeout after 2 attempts');
    expect(c.logs().some((l) => l.msg === 'webhook attempt failed' && l.reason === 'timeout')).toBe(true);
  } finally {
    for (const t of timers) clearInterval(t);
    await closeHostile(dribbler);
  }
});

it('case 2 (body): a receiver that answers 200 and then dribbles its body frees the request slot at TimeoutMilliseconds; the 200 counts', async () => {
  const timers = new Set<NodeJS.Timeout>();
  const dribbler = await hostile((s) => {
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n');
      const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write('a')), 100);
      timers.add(t);
    });
  });
  try {
    const { c } = await h.outbound('dribble-body', [{ url: dribbler.url }], { Webhooks__TimeoutMilliseconds: '600', Webhooks__MaxInFlight: '1' });
    for (let i = 0; i < 5; i++) await h.produce(i * 10, 10).then(() => new Promise((res) => setTimeout(res, 150)));
    // five or so batches through one request slot, each cut at 0.6 s: all delivered and acknowledged
    const group = async () => {
      const g = ((await client.xinfo('GROUPS', 'process:updates')) as unknown[][]).find((x) => x[1] === 'rest-outbound:dribble-body') ?? [];
      return Object.fromEntries(Array.from({ length: g.length / 2 }, (_, i) => [String(g[2 * i]), g[2 * i + 1]]));
    };
    await eventually(async () => ((await group())['entries-read'] === 50 && (await group()).pending === 0 ? true : undefined), 20000, 'all read and acknowledged');
    expect(await client.exists('connectors:dribble-body:deadletter')).toBe(0);
    expect(c.logs().some((l) => l.msg === 'webhook attempt failed')).toBe(false);
  } finally {
    for (const t of timers) clearInterval(t);
    await closeHostile(dribbler);
  }
});

