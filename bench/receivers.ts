/**
 * Webhook receivers for the push scenarios: one HTTP server per port given, each recording the
 * points it received and their end-to-end latency (receipt time − the producer's append time `t`).
 * Asked over IPC for a report, it answers with counts and latency percentiles per receiver.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';

type Seen = { t: number; seq: number; w?: number; timestamp?: unknown };
/** push-report's points carry `t-seq[-w]` in `timestamp` (bench/producer.ts). */
const fromTimestamp = (p: Seen): Seen => {
  if (p.seq !== undefined || typeof p.timestamp !== 'string') return p;
  const [t, seq, w] = p.timestamp.split('-');
  return { t: Number(t), seq: Number(seq), ...(w !== undefined ? { w: 1 } : {}) };
};
const INFLUX_FIELDS = /[ ,](seq|t|w)=([0-9.e+-]+)/g;
/**
 * The points of a request in any format of CONTRACT 4.7 (push-formats): the default body, NDJSON
 * lines, line protocol (the fields `seq`, `t`, `w`), or the `jsonata` scenario's `{"records":[…]}`.
 */
const pointsOf = (raw: Buffer, headers: IncomingHttpHeaders): Seen[] => {
  const text = (headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
  const type = String(headers['content-type'] ?? '');
  if (type.startsWith('application/x-ndjson')) return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Seen);
  if (type.startsWith('text/plain')) {
    return text.split('\n').filter((l) => l !== '').map((l) => {
      const p: Record<string, number> = {};
      for (const m of l.matchAll(INFLUX_FIELDS)) p[m[1]!] = Number(m[2]);
      return { t: p.t!, seq: p.seq!, ...(p.w !== undefined ? { w: p.w } : {}) };
    });
  }
  const body = JSON.parse(text) as { datapoints?: Seen[]; records?: Seen[] };
  return body.datapoints ?? body.records ?? [];
};
import { percentile } from './lib';

const ports = process.argv.slice(2).map(Number);
const stats = ports.map(() => ({ points: 0, requests: 0, seqs: new Set<number>(), duplicates: 0, latencies: [] as number[], first: 0, last: 0, samples: [] as Array<[number, number]> }));
/** RECEIVERS_DOWN_FIRST=1: the first port refuses connections until the message 'up'. */
const downFirst = process.env.RECEIVERS_DOWN_FIRST === '1';

const listen = (port: number, i: number) => {
  createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const now = Date.now();
      const s = stats[i]!;
      let points: Seen[];
      try {
        points = pointsOf(Buffer.concat(parts), req.headers);
      } catch (err) {
        process.stderr.write(`receiver ${port}: ${req.method} ${req.url} ${JSON.stringify(req.headers)} ${Buffer.concat(parts).length} bytes: ${String(err)}\n`);
        res.writeHead(400).end();
        return;
      }
      s.requests++;
      for (const p of points.map(fromTimestamp)) {
        if (s.seqs.has(p.seq)) s.duplicates++;
        else s.seqs.add(p.seq);
        s.points++;
        if (p.w === undefined) {
          s.latencies.push(now - p.t);
          s.samples.push([now, now - p.t]);
        }
      }
      if (s.first === 0) s.first = now;
      s.last = now;
      res.writeHead(200).end();
    });
  }).listen(port, '127.0.0.1');
};
ports.forEach((port, i) => {
  if (!(downFirst && i === 0)) listen(port, i);
});

/** Latency percentiles of receiver `i` for points received within [from, to). */
const windowed = (i: number, from: number, to: number) => {
  const sorted = stats[i]!.samples.filter(([at]) => at >= from && at < to).map(([, l]) => l).sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};

process.on('message', (m: string | { window: [number, number] }) => {
  if (typeof m === 'object') {
    process.send?.(ports.map((_, i) => windowed(i, m.window[0], m.window[1])));
  } else if (m === 'up') {
    listen(ports[0]!, 0);
    process.send?.('ok');
  } else if (m === 'reset') {
    for (const s of stats) Object.assign(s, { points: 0, requests: 0, seqs: new Set<number>(), duplicates: 0, latencies: [], first: 0, last: 0, samples: [] });
    process.send?.('ok');
  } else if (m === 'report') {
    process.send?.(
      stats.map((s) => {
        const sorted = [...s.latencies].sort((a, b) => a - b);
        return { distinct: s.seqs.size, points: s.points, duplicates: s.duplicates, requests: s.requests, p50: percentile(sorted, 50), p99: percentile(sorted, 99), first: s.first, last: s.last };
      }),
    );
  }
});
process.send?.('ready');
