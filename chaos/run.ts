/**
 * `npm run chaos`: a bounded, seeded fault-injection run of the push side (issue 9).
 *
 * A private redis-server (append-only, fsync always), a producer appending numbered entries at a
 * steady rate over CASDUs 10–13, four webhook receivers — healthy, flapping (503s, connection
 * resets, hangs), slow, and filtered (its webhook's filter takes CASDU 12 only: one point in four) —
 * and the built outbound connector, supervised like an orchestrator would (restarted when it
 * exits); beside it the built inbound connector, supervised too, taking numbered POSTs of three
 * mappings each. The connectors reach Redis through a TCP proxy of the run's own, and the flapping
 * receiver is reached through another. Meanwhile, from a seeded schedule in which every kind comes
 * at least once: SIGKILL and SIGTERM of the connectors, configuration changes, SIGKILL and restart
 * of Redis, a second replica that joins and is SIGKILLed, Redis out of memory for a while
 * (`maxmemory` lowered, `noeviction`), a partition that neither answers nor resets (the proxy stops
 * forwarding, both ways, then goes on) between the connectors and Redis and between the outbound
 * connector and a webhook, and a slow Redis (the proxy delays every chunk). Then the faults stop,
 * every receiver is healthy, and the run waits until they have every entry.
 *
 * The inbound side is checked too (every fourth POST an array of five buffered readings, CONTRACT
 * 5.5): no POST answered 200 whose entries are not all in process:updates (no acknowledged write
 * lost), no POST with some but not all of its entries there — an array whole or not at all — or
 * keys holding values of two POSTs (no partial write), and every acknowledged POST's points at
 * every receiver.
 *
 * Printed per receiver: produced, received, lost, raw duplicates, duplicates left after
 * de-duplication by webhook-id, ids seen with two contents, and where raw duplicates came from (a
 * duplicate counts as "after a SIGKILL" when a process was SIGKILLed between its two copies (or up to
 * 2 s before the first: requests it had already sent still arrive), "after
 * a timeout" when the receiver answered its first copy only after the connector had given up on it).
 * The filtered receiver is counted against its subset: "produced" is what its filter matches, and
 * points outside it are counted (`outsideFilter`, which must be 0).
 * A fifth receiver, "late", is added to the configuration a third into the faults (CONTRACT 4.6:
 * `initialState`, `integrityPeriodSeconds` 10): it applies the first copy of each webhook-id in
 * stream order — by the stream position its webhook-id carries, as docs/push.md tells a receiver
 * that must hold exactly the image — and must end holding the process image exactly
 * (`imageMismatches` 0), besides losing nothing appended after its first request came. What it
 * would hold applying requests as they arrive is reported (`arrivalOrderMismatches`), not judged:
 * retries and a killed replica's claimed entries arrive after newer ones by design (CONTRACT 4.2,
 * 4.6 "retries aside").
 * Three more receivers get the same points in other bodies (CONTRACT 4.7): "ndjson" (a point a
 * line), "influx-line" (line protocol, parsed back: tags casdu and ioa, fields value and seq) and
 * "jsonata" (an expression reshaping each batch, slow: a quarter of a second or more for a batch whose
 * first point's seq ends in 0, about one batch in ten — every batch that slow would be 2–3 s of CPU a
 * second at this rate —, a few ms for the others; evaluated in the connector's evaluation process), held to the
 * same checks as the healthy one but the SIGKILL rule.
 * A ninth receiver, "report", has `report` (CONTRACT 4.8) on CASDU 14, whose slow floats a producer of
 * its own appends through the faults and a quiet tail after them: nothing the rules forbid is sent
 * to it, and in the tail it gets exactly what a stream-order reader applying 4.8 chooses (chaos/report.ts).
 * Exit status 0 when lost, duplicates after de-duplication, ids with two contents and points
 * outside a filter are 0 everywhere, the healthy receiver's raw duplicates all follow a SIGKILL, and the inbound checks
 * hold; 1 otherwise.
 *
 * Environment: CHAOS_SECONDS (fault period, default 300), CHAOS_SEED (default: random, printed),
 * CHAOS_RATE (entries/s, default 1500), CHAOS_CLAIM_IDLE_MS (default 60000, the contract's),
 * CHAOS_SETTLE_SECONDS (default 240, from the last entry appended), CHAOS_FAULT_GAP_MS (pause between faults, `min,max`, default 3000,9000),
 * CHAOS_POST_RATE (inbound POSTs/s, default 50), CHAOS_JSONATA_STEPS (the jsonata receiver's slow
 * batches' steps, default 250000: on a machine loaded enough to stretch them past the 1 s limit of
 * CONTRACT 4.7 they are refused — dead-lettered with the limit's error and the default body, which
 * the run reads back: their points are counted `refusedAtLimit`, not lost; a point neither received
 * nor there is lost), CHAOS_FAULTS (the kinds to inject, comma-separated;
 * default all), CHAOS_LOG_DIR (a directory: each connector's log is appended to `{name}.log` there).
 * The seed fixes the fault schedule (kinds, order, pauses, durations); how many fit into the
 * period is the machine's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTcpServer, connect as tcpConnect, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../support/freePort';
import { startRedisServer } from '../support/redisServer';
import { keyOf, StreamOrderedState } from '../support/streamOrder';
import { BIN_PATH } from '../src/version';
import { LIMIT_ERROR } from '../src/streams/webhook/jsonataProcess';
import { missingMessage, missingPrograms } from '../support/prerequisites';
import { checkReport, produceReport, REPORT_CASDU, REPORT_SETTINGS } from './report';

const SECONDS = Number(process.env.CHAOS_SECONDS ?? 300);
const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RATE = Number(process.env.CHAOS_RATE ?? 1500);
const CLAIM_IDLE_MS = Number(process.env.CHAOS_CLAIM_IDLE_MS ?? 60000);
const SETTLE_SECONDS = Number(process.env.CHAOS_SETTLE_SECONDS ?? 240);
const [GAP_MIN, GAP_MAX] = (process.env.CHAOS_FAULT_GAP_MS ?? '3000,9000').split(',').map(Number) as [number, number];
const POST_RATE = Number(process.env.CHAOS_POST_RATE ?? 50);
/** The jsonata receiver's slow batches: this many `$sum` steps (250,000: 220–240 ms on a quiet machine here). */
const JSONATA_STEPS = Number(process.env.CHAOS_JSONATA_STEPS ?? 250000);
const ID = 'chaos';
const INBOUND_ID = 'chaos-in';
/** The inbound connector's points: casdu 2, ioa 1..3, the POST's number as value. */
const INBOUND_CASDU = 2;
const INBOUND_IOAS = [1, 2, 3];
/**
 * Every fourth POST is an array of buffered readings (CONTRACT 5.5): ARRAY_ITEMS items, item j
 * carrying the value k + j/8 (exact in binary), so that each reading is told apart and an array is
 * seen whole or not at all.
 */
const ARRAY_ITEMS = 5;
const isArrayPost = (k: number) => k % 4 === 3;
/** The values POST k writes (each at every one of INBOUND_IOAS). */
const valuesOf = (k: number): number[] => (isArrayPost(k) ? Array.from({ length: ARRAY_ITEMS }, (_, j) => k + j / 8) : [k]);
const TIMEOUT_MS = 3000;
const KILL_SLACK_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (s: string) => process.stdout.write(`${s}\n`);

/** mulberry32: a small seeded PRNG, so that a run can be repeated from its seed. */
const prng = (seed: number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};
/**
 * Two streams from the seed: the fault schedule (which faults, the pauses between them, how long
 * each lasts) draws only from `schedule`, in the order the faults come, so a seed repeats its
 * faults whatever else a run does; the receivers' moods (the flapping one's spells, the slow one's
 * delays) draw from `noise`, as their requests come.
 */
const schedule = prng(SEED);
const noise = prng(SEED ^ 0x5bd1e995);
const between = (lo: number, hi: number, random: () => number = schedule) => lo + Math.floor(random() * (hi - lo + 1));

// --- Redis -------------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'rc-chaos-'));
let redisPort = 0;
let redisProc: ChildProcess | undefined;

const startRedis = async (): Promise<void> => {
  redisProc = await startRedisServer(redisPort, dir);
};

const killRedis = (): Promise<void> =>
  new Promise((resolve) => {
    const p = redisProc;
    if (p === undefined || p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });

// --- proxies: partitions and latency -------------------------------------------------------------

/**
 * A TCP proxy to `127.0.0.1:target`. `paused`: nothing is forwarded either way, and nothing is
 * reset — what a network partition looks like to both ends (TCP keeps retransmitting; once it
 * heals, what was sent arrives). `delayMs`: every chunk is held this long, in order — a slow link.
 */
interface Proxy {
  readonly port: number;
  paused: boolean;
  delayMs: number;
  /** Forwards what was held back (after a pause, or a delay taken away). */
  flush(): void;
  close(): Promise<void>;
}

const startProxy = async (target: () => number): Promise<Proxy> => {
  const valves = new Set<() => void>();
  const sockets = new Set<Socket>();
  const proxy: Proxy = {
    port: 0, paused: false, delayMs: 0,
    flush: () => valves.forEach((v) => v()),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  /** One direction: chunks queued with their arrival time, written in order when let through. */
  const valve = (to: Socket) => {
    const queue: Array<{ chunk: Buffer; at: number }> = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = () => {
      timer = undefined;
      while (queue.length > 0 && !proxy.paused && !to.destroyed) {
        const wait = queue[0]!.at + proxy.delayMs - Date.now();
        if (wait > 0) {
          timer = setTimeout(drain, wait);
          return;
        }
        to.write(queue.shift()!.chunk);
      }
    };
    const push = (chunk: Buffer) => {
      queue.push({ chunk, at: Date.now() });
      if (timer === undefined) drain();
    };
    valves.add(() => timer === undefined && drain());
    return push;
  };
  const server: TcpServer = createTcpServer((client) => {
    const upstream = tcpConnect(target(), '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const toUpstream = valve(upstream);
    const toClient = valve(client);
    client.on('data', toUpstream);
    upstream.on('data', toClient);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as { port: number }).port;
  return proxy;
};

// --- receivers ---------------------------------------------------------------------------------

type Mode = 'ok' | '503' | 'reset' | 'hang';

interface Receiver {
  readonly name: string;
  mode: Mode;
  /** Delay of every answer (the slow receiver). */
  delay: () => number;
  /** Its webhook's filter (CONTRACT 4.5), and which produced seqs it matches (all, without one). */
  readonly filter?: object;
  readonly wants: (seq: number) => boolean;
  /** Points received that its filter does not match (producer's seqs and inbound points alike). */
  outside: number;
  url: string;
  server: Server;
  /** webhook-id → hash of the first body delivered under it. */
  readonly ids: Map<string, string>;
  /** seq → times received (2xx only). */
  readonly raw: Map<number, number>;
  readonly dedup: Map<number, number>;
  idsWithTwoContents: number;
  /** For each raw duplicate request: when its id was first seen and when again. */
  readonly repeats: Array<{ first: number; again: number; points: number; id: string }>;
  readonly firstSeen: Map<string, number>;
  /** ids whose first copy was answered after the connector had given up on it (its timeout): retried by design. */
  readonly answeredTooLate: Set<string>;
  /** Points the connector dead-lettered for this receiver, and why. */
  deadLettered: number;
  deadLetterReasons: Map<string, number>;
  /**
   * Seqs and inbound points (`{post}:{ioa}`) of its batches dead-lettered because their evaluation
   * reached the 1 s limit (CONTRACT 4.7: `refused`, the default body, never retried): accounted for
   * where the contract puts them, not lost. Only a loaded machine stretches a slow batch that far.
   */
  readonly refusedAtLimit: Set<number>;
  readonly refusedAtLimitInbound: Set<string>;
  /** Points written by the inbound connector, as `{post}:{ioa}` (first copies of each webhook-id). */
  readonly inbound: Set<string>;
  /** The seqs of each webhook-id's first copy, to show what differs when an id comes with another content. */
  readonly firstSeqs: Map<string, string>;
  /** seq → the webhook-id of the first copy that carried it: a seq in a second first copy is reported with both ids. */
  readonly seqId: Map<number, string>;
  dedupReports: number;
  /** In the outbound's configuration (the late receiver joins during the run). */
  inConfig: boolean;
  /** The late receiver's settings (CONTRACT 4.6), and the seqs it is owed: from `produced` when its first request came (Infinity until then). */
  readonly late?: { readonly initialState: true; readonly integrityPeriodSeconds: number };
  fromSeq: number;
  /**
   * What it holds, applying the first copy of every request in stream order, by the position its
   * webhook-id carries (support/streamOrder.ts): a request that arrives after a newer one (a retry,
   * the entries of a killed replica claimed a minute later) changes nothing.
   */
  readonly state: StreamOrderedState;
  /** What it would hold applying every first copy as it arrives, whatever its position (reported, CONTRACT 4.6's "retries aside"). */
  readonly arrived: Map<string, unknown>;
  /** `{casdu}:{ioa}` → the request that last set it in arrival order, when, and whether it came after a newer one. */
  readonly setBy: Map<string, { readonly id: string; readonly at: number; readonly behind: boolean }>;
  /** webhook-ids whose form gives no stream position (none expected: a run with one fails): not applied, and reported. */
  unplaced: number;
  /** Requests of interrogations (first copies), by cause. */
  readonly interrogations: Map<string, number>;
  /** Its webhook's body format (CONTRACT 4.7): the default body when absent. */
  readonly format?: { readonly type: 'ndjson' } | { readonly type: 'influx-line' } | { readonly type: 'jsonata'; readonly expression: string };
  /** Its webhook's report (CONTRACT 4.8, chaos/report.ts), and the points of its first copies. */
  readonly report?: object;
  readonly reportPoints?: Array<Record<string, unknown>>;
}

/**
 * The jsonata receiver's expression: the points reshaped (the fields the checks read), and for a
 * batch whose first point's seq ends in 0 `CHAOS_JSONATA_STEPS` steps of `$sum` (250,000 by default:
 * 220–240 ms measured here during a chaos run).
 * Deterministic: a batch sent again renders the same bytes.
 */
const SLOW_JSONATA =
  `($slow := datapoints[0].seq % 10 = 0 ? $sum([1..${JSONATA_STEPS}].($ * 2)) : 0; { "datapoints": [datapoints.{ "casdu": casdu, "ioa": ioa, "value": value, "seq": seq }], "cause": cause, "slow": $slow })`;

type Point = { seq?: number; casdu?: number; ioa?: number; value?: number };
const INFLUX_TAG = /[,](casdu|ioa)=([0-9]+)/g;
const INFLUX_FIELD = /[ ,](value|seq)=(-?[0-9.e+]+)/g;
/** A request's points and cause in its receiver's format: the default body, NDJSON lines, or line protocol (tags casdu, ioa; fields value, seq). */
const parseBody = (body: string, format: Receiver['format'], headers: import('node:http').IncomingHttpHeaders): { points: Point[]; cause?: string } => {
  const header = headers['webhook-cause'];
  const cause = typeof header === 'string' ? { cause: header } : {};
  if (format?.type === 'ndjson') return { points: body.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Point), ...cause };
  if (format?.type === 'influx-line') {
    return {
      points: body.split('\n').filter((l) => l !== '').map((l) => {
        const p: Record<string, number> = {};
        const [head, fields] = [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' '))];
        for (const m of head.matchAll(INFLUX_TAG)) p[m[1]!] = Number(m[2]);
        for (const m of fields.matchAll(INFLUX_FIELD)) p[m[1]!] = Number(m[2]);
        return p as Point;
      }),
      ...cause,
    };
  }
  const parsed = JSON.parse(body) as { datapoints: Point[]; cause?: string };
  return { points: parsed.datapoints, ...(parsed.cause !== undefined ? { cause: parsed.cause } : {}) };
};

/** A list of seqs as runs (`3-7,9,in12:1`), for the report. */
const ranges = (xs: Array<number | string>): string => {
  const out: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (typeof xs[j] === 'number' && typeof xs[j + 1] === 'number' && (xs[j + 1] as number) === (xs[j] as number) + 1) j++;
    out.push(j > i ? `${xs[i]}-${xs[j]}` : String(xs[i]));
    i = j + 1;
  }
  return out.join(',');
};

const startReceiver = async (
  name: string, delay: () => number, filter?: { casdu: number[] }, late?: { initialState: true; integrityPeriodSeconds: number }, format?: Receiver['format'], report?: object,
): Promise<Receiver> => {
  const port = await freePort();
  const r: Receiver = {
    name, mode: 'ok', delay, url: `http://127.0.0.1:${port}/hook`, server: undefined as unknown as Server,
    ...(filter !== undefined ? { filter } : {}), ...(late !== undefined ? { late } : {}), ...(format !== undefined ? { format } : {}), ...(report !== undefined ? { report, reportPoints: [] } : {}), inConfig: late === undefined, fromSeq: late === undefined ? 0 : Infinity, state: new StreamOrderedState(), arrived: new Map(), setBy: new Map(), unplaced: 0, interrogations: new Map(),
    wants: (seq) => (filter === undefined || filter.casdu.includes(casduOf(seq))) && seq >= r.fromSeq, outside: 0,
    ids: new Map(), raw: new Map(), dedup: new Map(), idsWithTwoContents: 0, repeats: [], firstSeen: new Map(), answeredTooLate: new Set(),
    deadLettered: 0, deadLetterReasons: new Map(), refusedAtLimit: new Set(), refusedAtLimitInbound: new Set(), inbound: new Set(), firstSeqs: new Map(), seqId: new Map(), dedupReports: 0,
  };
  r.server = createServer((req, res) => {
    const arrived = Date.now();
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const mode = r.mode;
      if (mode === 'hang') return;
      if (mode === 'reset') return void req.socket.destroy();
      if (mode === '503') return void res.writeHead(503).end();
      setTimeout(() => {
        const body = Buffer.concat(parts).toString('utf8');
        const id = String(req.headers['webhook-id']);
        const parsed = parseBody(body, r.format, req.headers);
        const points = parsed.points;
        const seqs = points.flatMap((p) => (typeof p.seq === 'number' ? [p.seq] : []));
        const posted = points.flatMap((p) => (p.seq === undefined && p.casdu === INBOUND_CASDU ? [`${p.value}:${p.ioa}`] : []));
        const hash = createHash('sha256').update(body).digest('hex');
        const now = Date.now();
        for (const s of seqs) r.raw.set(s, (r.raw.get(s) ?? 0) + 1);
        if (r.filter !== undefined) r.outside += points.filter((p) => !(r.filter as { casdu: number[] }).casdu.includes(p.casdu ?? -1)).length;
        if (r.late !== undefined && r.fromSeq === Infinity) r.fromSeq = produced;
        const known = r.ids.get(id);
        if (known === undefined) {
          r.ids.set(id, hash);
          r.firstSeen.set(id, now);
          r.firstSeqs.set(id, ranges(points.map((p) => (typeof p.seq === 'number' ? p.seq : `in${p.value}:${p.ioa}`))));
          r.reportPoints?.push(...(points as Array<Record<string, unknown>>));
          // the connector gave up on this copy (its timeout, or a stop's deadline): it sends it again, by design
          if (req.socket.destroyed || now - arrived >= TIMEOUT_MS - 50) r.answeredTooLate.add(id);
          for (const s of seqs) {
            r.dedup.set(s, (r.dedup.get(s) ?? 0) + 1);
            const before = r.seqId.get(s);
            if (before !== undefined && r.dedupReports < 5) {
              r.dedupReports++;
              const firstAt = r.firstSeen.get(before)!;
              const between = log.filter((l) => l.at >= firstAt - KILL_SLACK_MS && l.at <= now).map((l) => l.fault).join(',') || 'none';
              say(`  ${r.name}: seq ${s} under ${before} (${r.firstSeqs.get(before)}) and again under ${id} (${ranges(seqs)}), ${now - firstAt} ms later; faults between: ${between}`);
            }
            r.seqId.set(s, id);
          }
          for (const p of posted) r.inbound.add(p);
          // a receiver that de-duplicates by webhook-id and applies in stream order; and one that applies as requests arrive
          const taken = r.state.apply(id, points);
          if (taken === undefined) r.unplaced++;
          for (const p of points) {
            const key = keyOf(p);
            r.arrived.set(key, p.value);
            if (r.late !== undefined) r.setBy.set(key, { id, at: now, behind: taken !== undefined && !taken.has(key) });
          }
          if (parsed.cause !== undefined) r.interrogations.set(parsed.cause, (r.interrogations.get(parsed.cause) ?? 0) + 1);
        } else {
          if (known !== hash) {
            r.idsWithTwoContents++;
            const between = log.filter((l) => l.at >= r.firstSeen.get(id)! - KILL_SLACK_MS && l.at <= now).map((l) => l.fault).join(',') || 'none';
            say(`  ${r.name}: ${id} again with another content, ${now - r.firstSeen.get(id)!} ms after the first; faults between: ${between}`);
            say(`    first: ${r.firstSeqs.get(id)}`);
            say(`    again: ${ranges(points.map((p) => (typeof p.seq === 'number' ? p.seq : `in${p.value}:${p.ioa}`)))}`);
          }
          r.repeats.push({ first: r.firstSeen.get(id)!, again: now, points: seqs.length, id });
        }
        res.writeHead(200).end();
      }, r.delay());
    });
  });
  await new Promise<void>((resolve) => r.server.listen(port, '127.0.0.1', resolve));
  return r;
};

// --- connectors --------------------------------------------------------------------------------

/** The connectors reach Redis through this proxy (partitions, latency); the producer and the checks do not. */
let redisProxy: Proxy;
/** The flapping receiver is reached through this one (a webhook partition). */
let webhookProxy: Proxy;

const connectorEnv = (consumer: string) => ({
  PATH: process.env.PATH ?? '',
  Id: ID,
  ConnectionStrings__Datastore: `127.0.0.1:${redisProxy.port}`,
  Datastore__ConsumerName: consumer,
  Datastore__StartFromLatest: 'false',
  Datastore__ConnectionRetrySeconds: '0.5',
  Datastore__ConfigPollIntervalMilliseconds: '500',
  Datastore__ClaimIdleMilliseconds: String(CLAIM_IDLE_MS),
  Datastore__ClaimIntervalMilliseconds: String(Math.max(500, Math.floor(CLAIM_IDLE_MS / 2))),
  Webhooks__TimeoutMilliseconds: String(TIMEOUT_MS),
  // about a minute of retries (0.5 s, 1 s, … 32 s): a flapping receiver's spells fit in it
  Webhooks__MaxAttempts: '8',
});

/** Where a connector's log goes: nowhere, or appended to `{CHAOS_LOG_DIR}/{name}.log` (to read a failed run's story). */
const logTo = (name: string): 'ignore' | number =>
  process.env.CHAOS_LOG_DIR === undefined || process.env.CHAOS_LOG_DIR === '' ? 'ignore' : openSync(join(process.env.CHAOS_LOG_DIR, `${name}.log`), 'a');

const spawnConnector = (consumer: string): ChildProcess => {
  const out = logTo(consumer);
  const p = spawn(process.execPath, [BIN_PATH, 'outbound'], { env: connectorEnv(consumer), stdio: ['ignore', out, 'inherit'] });
  if (typeof out === 'number') closeSync(out);
  return p;
};

let inboundPort = 0;
const spawnInbound = (): ChildProcess => {
  const out = logTo('inbound');
  const p = spawn(process.execPath, [BIN_PATH, 'inbound'], {
    env: {
      PATH: process.env.PATH ?? '', Id: INBOUND_ID, ConnectionStrings__Datastore: `127.0.0.1:${redisProxy.port}`,
      Datastore__ConnectionRetrySeconds: '0.5',
      // the producer's entries must not be trimmed by the inbound connector's appends
      Datastore__StreamMaxLength: '100000000',
    },
    stdio: ['ignore', out, 'inherit'],
  });
  if (typeof out === 'number') closeSync(out);
  return p;
};

/** A connector restarted whenever it exits, as an orchestrator would. */
interface Supervised {
  proc: ChildProcess;
  supervise: boolean;
  restarts: number;
}
const supervised = (start: () => ChildProcess): Supervised => {
  const s: Supervised = { proc: undefined as unknown as ChildProcess, supervise: true, restarts: 0 };
  const go = () => {
    s.proc = start();
    s.proc.once('exit', () => {
      if (!s.supervise) return;
      s.restarts++;
      setTimeout(go, 300);
    });
  };
  go();
  return s;
};
let main: Supervised;
let inbound: Supervised;
let replica: ChildProcess | undefined;

const exited = (p: ChildProcess) => p.exitCode !== null || p.signalCode !== null;
const signal = (p: ChildProcess | undefined, s: NodeJS.Signals): Promise<void> =>
  new Promise((resolve) => {
    if (p === undefined || exited(p)) return resolve();
    p.once('exit', () => resolve());
    p.kill(s);
  });

// --- the inbound connector's load ------------------------------------------------------------------

/** POST number → its answer's status (0: no answer: refused, reset, timed out). */
const posts = new Map<number, number>();
let posting = true;

const post = (n: number, agent: Agent): Promise<number> =>
  new Promise((resolve) => {
    const items = valuesOf(n).map((v) => ({ a: v, b: v, c: v }));
    const body = JSON.stringify(isArrayPost(n) ? items : items[0]);
    const req = httpRequest(
      { host: '127.0.0.1', port: inboundPort, path: '/api/datapoints?topic=chaos', method: 'POST', agent, timeout: 10000, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(body);
  });

/** POST_RATE requests a second, at most 4 at once; each body {a,b,c} = its number, or every fourth an array of readings. */
const postLoop = async (): Promise<void> => {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const inFlight = new Set<Promise<void>>();
  const start = Date.now();
  let n = 0;
  while (posting) {
    const due = Math.floor(((Date.now() - start) / 1000) * POST_RATE);
    while (n < due && inFlight.size < 4) {
      const k = n++;
      const p: Promise<void> = post(k, agent).then((status) => void posts.set(k, status));
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    await sleep(10);
  }
  await Promise.all(inFlight);
  agent.destroy();
};

const acknowledged = (): number[] => [...posts].filter(([, status]) => status === 200).map(([k]) => k);

interface InboundRow {
  posts: number;
  /** Of them, arrays of ARRAY_ITEMS readings; and those answered 200. */
  arrays: number;
  arrays200: number;
  answered200: number;
  answered503: number;
  noAnswer: number;
  acknowledgedLost: number;
  partial: number;
  keysOfTwoPosts: boolean;
}

/** No acknowledged write lost, no partial write: read back from process:updates and the keys. */
const checkInbound = async (): Promise<InboundRow> => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
  const seen = new Map<number, Set<number>>();
  try {
    for (let start = '-'; ;) {
      const page = (await c.xrange('process:updates', start, '+', 'COUNT', 10000)) as Array<[string, string[]]>;
      for (const [, fields] of page) {
        const f = new Map<string, string>();
        for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
        if (f.get('source') !== INBOUND_ID) continue;
        const point = JSON.parse(f.get('data') ?? '{}') as { value?: number; ioa?: number };
        // by value: a reading of an array has its own
        const v = Number(point.value);
        if (!seen.has(v)) seen.set(v, new Set());
        seen.get(v)!.add(Number(point.ioa));
      }
      if (page.length < 10000) break;
      start = `(${page[page.length - 1]![0]}`;
    }
    const keys = await c.mget(INBOUND_IOAS.map((ioa) => `process:image:casdu:${INBOUND_CASDU}:ioa:${ioa}`));
    const values = new Set(keys.map((v) => (v === null ? null : (JSON.parse(v) as { value: number }).value)));
    const statuses = [...posts.values()];
    const whole = (v: number) => seen.get(v)?.size === INBOUND_IOAS.length;
    const postsSeen = new Set([...seen.keys()].map(Math.floor));
    return {
      posts: posts.size,
      arrays: [...posts.keys()].filter(isArrayPost).length,
      arrays200: acknowledged().filter(isArrayPost).length,
      answered200: statuses.filter((x) => x === 200).length,
      answered503: statuses.filter((x) => x === 503).length,
      noAnswer: statuses.filter((x) => x === 0).length,
      acknowledgedLost: acknowledged().filter((k) => !valuesOf(k).every(whole)).length,
      // a POST of which something is there, but not every point of every reading
      partial: [...postsSeen].filter((k) => !valuesOf(k).every(whole)).length,
      keysOfTwoPosts: values.size > 1,
    };
  } finally {
    c.disconnect();
  }
};

/** Acknowledged POSTs of which a receiver has not received every point (of every reading). */
const inboundMissing = (r: Receiver): number =>
  acknowledged().filter((k) => valuesOf(k).some((v) => INBOUND_IOAS.some((ioa) => !r.inbound.has(`${v}:${ioa}`) && !r.refusedAtLimitInbound.has(`${v}:${ioa}`)))).length;

// --- producer ----------------------------------------------------------------------------------

let produced = 0;
/** The producer's points spread over CASDUs 10..13, so that the filtered receiver (CASDU 12) wants one in four. */
const casduOf = (seq: number): number => 10 + (seq % 4);
const FILTERED_CASDU = 12;
let producing = true;

/**
 * Appends entries with explicit IDs chosen here, so that a write whose reply was lost (a Redis crash,
 * a partition) is tried again under the same ID and can never land twice. A write refused as
 * "equal or smaller than the top item" either landed before (the entry under that ID is ours: it
 * counts as written) or was overtaken by another writer (the inbound connector appends with `*`):
 * then it, and every seq after it, gets a fresh ID.
 */
const produce = async (): Promise<void> => {
  const redis = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 200 });
  redis.on('error', () => undefined);
  /** Seqs due and not yet known to be written, in order, each with the ID it is tried under. */
  const todo = new Map<number, string | undefined>();
  let lastMs = 0;
  let lastSeq = 0;
  const freshId = () => {
    const now = Date.now();
    if (now > lastMs) [lastMs, lastSeq] = [now, 0];
    else lastSeq++;
    return `${lastMs}-${lastSeq}`;
  };
  let next = 0;
  const start = Date.now();
  // after the stop, what is due is still written: the written seqs are 0..produced-1
  while (producing || todo.size > 0) {
    if (producing) for (const due = Math.floor(((Date.now() - start) / 1000) * RATE); next < due && todo.size < 5000; next++) todo.set(next, undefined);
    if (todo.size > 0 && redis.status === 'ready') {
      const batch = [...todo.keys()].slice(0, 500).map((seq): [number, string] => [seq, todo.get(seq) ?? freshId()]);
      const pipe = redis.pipeline();
      for (const [seq, id] of batch) {
        todo.set(seq, id);
        const data = `{"casdu":${casduOf(seq)},"ioa":${seq % 16777216},"type":36,"value":${seq},"timestamp":"${new Date().toISOString()}","source":"chaos","seq":${seq}}`;
        pipe.xadd('process:updates', 'MAXLEN', '~', '2000000', id, 'casdu', String(casduOf(seq)), 'ioa', String(seq % 16777216), 'source', 'chaos', 'data', data);
      }
      try {
        const replies = (await pipe.exec()) ?? [];
        for (const [i, [err]] of replies.entries()) {
          const [seq, id] = batch[i]!;
          if (err === null) {
            todo.delete(seq);
            produced++;
          } else if (/equal or smaller/.test(err.message)) {
            const [found] = (await redis.xrange('process:updates', id, id)) as Array<[string, string[]]>;
            if (found !== undefined && found[1].some((f) => f.endsWith(`"seq":${seq}}`))) {
              todo.delete(seq); // written before: its reply was lost
              produced++;
            } else todo.set(seq, undefined); // another writer overtook it: a fresh ID
          }
          // any other error (connection lost, OOM): tried again under the same ID
        }
      } catch {
        await sleep(100);
      }
    }
    await sleep(10);
  }
  redis.disconnect();
};

// --- faults ------------------------------------------------------------------------------------

type Fault = 'sigkill' | 'sigterm' | 'config' | 'redis' | 'replica' | 'oom' | 'partition-redis' | 'partition-webhook' | 'slow-redis';
const FAULTS: Fault[] = ['sigkill', 'sigterm', 'config', 'redis', 'replica', 'oom', 'partition-redis', 'partition-webhook', 'slow-redis'];
/** The kinds a run injects: CHAOS_FAULTS (a comma-separated list of them), all by default. */
const KINDS: Fault[] = (() => {
  const asked = (process.env.CHAOS_FAULTS ?? '').split(',').map((k) => k.trim()).filter((k) => k !== '');
  const unknown = asked.filter((k) => !(FAULTS as string[]).includes(k));
  if (unknown.length > 0) {
    process.stderr.write(`chaos: CHAOS_FAULTS: unknown ${unknown.join(', ')} (the kinds are ${FAULTS.join(', ')})\n`);
    process.exit(2);
  }
  return asked.length > 0 ? (asked as Fault[]) : FAULTS;
})();
const kills: number[] = [];
const log: Array<{ at: number; fault: string }> = [];
/**
 * How long a fault that lasts (out of memory, a partition, a slow link) lasts: up to 15 s, shorter
 * in short runs, and always under three quarters of the claim idle time: a consumer cut off for
 * longer looks dead to a replica, which then claims its entries and sends them again — by design
 * (CONTRACT 4.3), but then the healthy receiver's duplicates would not all follow a SIGKILL.
 */
const faultMs = () => {
  const most = Math.min(Math.max(2000, Math.min(15000, SECONDS * 200)), Math.floor(CLAIM_IDLE_MS * 0.75));
  return between(Math.min(1000, most), most);
};

/** A reading of Redis after the faults (it is up): its answer. */
const readRedis = async <A>(fn: (c: Redis) => Promise<A>): Promise<A> => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
  try {
    return await fn(c);
  } finally {
    c.disconnect();
  }
};

const withRedis = async (fn: (c: Redis) => Promise<unknown>): Promise<void> => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2, maxRetriesPerRequest: 2 });
  c.on('error', () => undefined);
  try {
    await fn(c);
  } catch {
    /* Redis away: skipped */
  } finally {
    c.disconnect();
  }
};

const inject = async (fault: Fault): Promise<void> => {
  log.push({ at: Date.now(), fault });
  say(`  ${new Date().toISOString().slice(11, 19)} ${fault}`);
  switch (fault) {
    case 'sigkill':
      kills.push(Date.now());
      await Promise.all([signal(main.proc, 'SIGKILL'), signal(inbound.proc, 'SIGKILL')]);
      break;
    case 'sigterm':
      await Promise.all([signal(main.proc, 'SIGTERM'), signal(inbound.proc, 'SIGTERM')]);
      break;
    case 'config':
      await withRedis((c) => c.set(`connectors:${ID}:config`, config(`changed at ${Date.now()}`)));
      break;
    case 'redis':
      await killRedis();
      await sleep(between(300, 2000));
      await startRedis();
      break;
    case 'replica': {
      const lives = between(3000, 15000); // drawn whether or not one is started: the schedule stays the seed's
      if (replica === undefined || exited(replica)) {
        replica = spawnConnector('replica');
        const r = replica;
        setTimeout(() => {
          kills.push(Date.now());
          r.kill('SIGKILL');
        }, lives);
      }
      break;
    }
    case 'oom': {
      // noeviction (Redis's default) and no room: every write is refused with OOM for a while
      const ms = faultMs();
      await withRedis((c) => c.config('SET', 'maxmemory', '1'));
      await sleep(ms);
      await withRedis((c) => c.config('SET', 'maxmemory', '0'));
      break;
    }
    case 'partition-redis':
    case 'partition-webhook': {
      const proxy = fault === 'partition-redis' ? redisProxy : webhookProxy;
      proxy.paused = true;
      await sleep(faultMs());
      proxy.paused = false;
      proxy.flush();
      break;
    }
    case 'slow-redis':
      redisProxy.delayMs = between(20, 200);
      await sleep(faultMs());
      redisProxy.delayMs = 0;
      redisProxy.flush();
      break;
  }
};

let receivers: Receiver[] = [];
const config = (description: string) =>
  JSON.stringify({
    description, hostUrls: ['http://127.0.0.1:0'],
    // the late receiver last: joining, it shifts no other webhook's index (a webhook's key holds it)
    webhooks: receivers.filter((r) => r.inConfig).sort((a, b) => Number(a.late !== undefined) - Number(b.late !== undefined)).map((r) => ({
      url: r.url, ...(r.filter !== undefined ? { filter: r.filter } : {}), ...(r.late ?? {}), ...(r.format !== undefined ? { format: r.format } : {}),
      ...(r.report !== undefined ? { report: r.report } : {}),
    })),
  });
const inboundConfig = () =>
  JSON.stringify({
    hostUrls: [`http://127.0.0.1:${inboundPort}`],
    mappings: INBOUND_IOAS.map((ioa, i) => ({ name: `m${ioa}`, topic: 'chaos', casdu: INBOUND_CASDU, ioa, type: 36, valuePath: ['a', 'b', 'c'][i]! })),
  });

/** The flapping receiver's phases: mostly healthy, with short spells (within the retry schedule) of 503s, resets and hangs. */
const flap = async (r: Receiver, until: () => boolean): Promise<void> => {
  const modes: Mode[] = ['ok', '503', 'ok', 'reset', 'ok', 'hang'];
  let i = 0;
  while (!until()) {
    r.mode = modes[i++ % modes.length]!;
    await sleep(r.mode === 'ok' ? between(2000, 6000, noise) : between(500, 3000, noise));
  }
  r.mode = 'ok';
};

// --- report ------------------------------------------------------------------------------------

interface Row {
  receiver: string;
  /** What it should get: every produced entry, or those its filter matches. */
  produced: number;
  received: number;
  lost: number;
  rawDuplicates: number;
  duplicatesAfterDedup: number;
  idsWithTwoContents: number;
  rawDuplicatesAfterSigkill: number;
  rawDuplicatesAfterTimeout: number;
  rawDuplicatesOther: number;
  /** Wanted, not received, in a batch dead-lettered at the evaluation's 1 s limit (the jsonata receiver on a loaded machine; not lost). */
  refusedAtLimit: number;
  deadLettered: number;
  /** Points it got that its filter does not match: must be 0. */
  outsideFilter: number;
  /** The late receiver (CONTRACT 4.6): points of the process image it does not hold with their current value (must be 0); interrogation requests it got. */
  imageMismatches: number | string;
  /** The same, for a receiver that applies every request as it arrives: each such point was last set by a request that came after a newer one (a retry, claimed entries). */
  arrivalOrderMismatches: number | string;
  interrogationRequests: string;
}

/** The process image as Redis holds it now: `{casdu}:{ioa}` → value. */
const readImage = async (): Promise<Map<string, unknown>> => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
  const image = new Map<string, unknown>();
  try {
    const keys = await c.keys('process:image:*');
    for (let i = 0; i < keys.length; i += 1000) {
      for (const v of await c.mget(keys.slice(i, i + 1000))) {
        const p = JSON.parse(v ?? '{}') as { casdu?: number; ioa?: number; value?: unknown };
        image.set(`${p.casdu}:${p.ioa}`, p.value);
      }
    }
  } finally {
    c.disconnect();
  }
  return image;
};
const mismatches = (r: Receiver, image: Map<string, unknown>): number => [...image].filter(([k, v]) => r.state.value(k) !== v).length;
/** Points the receiver would hold otherwise, applying every request as it arrives. */
const arrivalMismatches = (r: Receiver, image: Map<string, unknown>): Array<[string, unknown]> => [...image].filter(([k, v]) => r.arrived.get(k) !== v);

/** The seqs a receiver wants: how many, how many it did not get and are not in a dead letter of the 1 s limit (lost), how many are there. */
const coverage = (r: Receiver): { wanted: number; lost: number; refusedAtLimit: number } => {
  let lost = 0;
  let wanted = 0;
  let refusedAtLimit = 0;
  for (let s = 0; s < produced; s++) {
    if (!r.wants(s)) continue;
    wanted++;
    if (r.raw.has(s)) continue;
    if (r.refusedAtLimit.has(s)) refusedAtLimit++;
    else lost++;
  }
  return { wanted, lost, refusedAtLimit };
};

const report = (r: Receiver, image: Map<string, unknown>): Row => {
  // the late receiver is owed what a connector reads after the restart that added it; by the time
  // its first request came (its initial interrogation, before any live batch) the process with the
  // old configuration was gone: every seq appended after that counts (`fromSeq`, set then). Older
  // entries it may get too (pending ones of a killed process, claimed), but not all of them: those
  // the old configuration's process acknowledged were never its.
  const { wanted, lost, refusedAtLimit } = coverage(r);
  const extra = (m: Map<number, number>) => [...m.values()].reduce((n, c) => n + c - 1, 0);
  let afterKill = 0;
  let afterTimeout = 0;
  let other = 0;
  for (const rep of r.repeats) {
    // a request a process had already sent when it was SIGKILLed can still reach the receiver just
    // after the kill: a kill up to KILL_SLACK_MS before the first copy counts too
    if (kills.some((k) => k >= rep.first - KILL_SLACK_MS && k <= rep.again)) afterKill += rep.points;
    else if (r.answeredTooLate.has(rep.id)) afterTimeout += rep.points;
    else if (rep.points === 0) continue; // an interrogation's request again (a periodic one of the same P: the same image)
    else {
      other += rep.points;
      const before = kills.filter((k) => k <= rep.again).map((k) => rep.first - k);
      say(`  ${r.name}: ${rep.points} points again under ${rep.id}, ${rep.again - rep.first} ms after the first copy; nearest kill ${before.length > 0 ? `${Math.min(...before.filter((d) => d >= 0), Infinity)} ms before the first copy` : 'none'}; faults between: ${log.filter((l) => l.at >= rep.first - KILL_SLACK_MS && l.at <= rep.again).map((l) => l.fault).join(',') || 'none'}`);
    }
  }
  return {
    receiver: r.name, produced: wanted, received: r.raw.size, lost, refusedAtLimit, rawDuplicates: extra(r.raw), duplicatesAfterDedup: extra(r.dedup),
    idsWithTwoContents: r.idsWithTwoContents, rawDuplicatesAfterSigkill: afterKill, rawDuplicatesAfterTimeout: afterTimeout, rawDuplicatesOther: other,
    deadLettered: r.deadLettered,
    outsideFilter: r.outside,
    imageMismatches: r.late === undefined ? '-' : mismatches(r, image),
    arrivalOrderMismatches: r.late === undefined ? '-' : arrivalMismatches(r, image).length,
    interrogationRequests: r.late === undefined ? '-' : JSON.stringify(Object.fromEntries(r.interrogations)),
  };
};

/** The fields of each dead letter of the outbound connector. */
const deadLetters = async (): Promise<Array<Map<string, string>>> =>
  readRedis(async (c) =>
    (await c.xrange(`connectors:${ID}:deadletter`, '-', '+')).map(([, fields]) => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
      return f;
    }));

/**
 * The points of batches dead-lettered at the evaluation's 1 s limit, per receiver: `refused`, with
 * the limit's error and the default body (CONTRACT 4.7) — where the contract keeps them.
 */
let limitReadAfter = '-';
const readLimitRefusals = async (): Promise<void> => {
  // only what came since the last read: the settle loop calls this every half second, and the dead
  // letters hold whole bodies (megabytes to read and parse again each time, in the process that
  // also runs the receivers)
  const fresh = await readRedis(async (c) =>
    (await c.xrange(`connectors:${ID}:deadletter`, limitReadAfter === '-' ? '-' : `(${limitReadAfter}`, '+')).map(([id, fields]) => {
      limitReadAfter = id;
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
      return f;
    }));
  for (const f of fresh) {
    const r = receivers.find((x) => x.url === f.get('url'));
    if (r === undefined || f.get('reason') !== 'refused' || f.get('error') !== `format: ${LIMIT_ERROR}` || f.get('body') === undefined) continue;
    for (const p of parseBody(f.get('body')!, undefined, {}).points) {
      if (typeof p.seq === 'number') r.refusedAtLimit.add(p.seq);
      else if (p.casdu === INBOUND_CASDU) r.refusedAtLimitInbound.add(`${p.value}:${p.ioa}`);
    }
  }
};

/** Dead-lettered points per receiver (by URL), with their reasons: what a backlog would hold. */
const countDeadLetters = async (): Promise<void> => {
  for (const f of await deadLetters()) {
    const r = receivers.find((x) => x.url === f.get('url'));
    if (r === undefined) continue;
    // a backlog entry keeps the body in the webhook's format (CONTRACT 4.7)
    r.deadLettered += f.get('body') === undefined ? 0 : parseBody(f.get('body')!, r.format, {}).points.length;
    const why = (f.get('error') ?? '').replace(/\d+/g, 'N');
    r.deadLetterReasons.set(why, (r.deadLetterReasons.get(why) ?? 0) + 1);
  }
  await readLimitRefusals();
  for (const r of receivers) if (r.deadLetterReasons.size > 0) say(`dead letters for ${r.name}: ${JSON.stringify(Object.fromEntries(r.deadLetterReasons))}`);
};

const printTable = (rows: Row[]) => {
  const cols = Object.keys(rows[0]!) as Array<keyof Row>;
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (vals: string[]) => `| ${vals.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  say(line(cols));
  say(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) say(line(cols.map((c) => String(r[c]))));
};

const run = async (): Promise<number> => {
  const programs = missingPrograms(['redis-server']);
  if (programs.length > 0) {
    process.stderr.write(`${missingMessage(programs)}\n`);
    return 2;
  }
  say(`chaos: seed ${SEED}, ${SECONDS} s of faults at ${RATE} entries/s and ${POST_RATE} POSTs/s, claim idle ${CLAIM_IDLE_MS} ms (repeat with CHAOS_SEED=${SEED})`);
  redisPort = await freePort();
  await startRedis();
  redisProxy = await startProxy(() => redisPort);
  receivers = [
    await startReceiver('healthy', () => 0),
    await startReceiver('flapping', () => 0),
    await startReceiver('slow', () => between(200, 1500, noise)),
    // one CASDU in four, and none of the inbound connector's points (CASDU 2)
    await startReceiver('filtered', () => 0, { casdu: [FILTERED_CASDU] }),
    // added a third into the faults, with its initial interrogation and a periodic one every 10 s (CONTRACT 4.6)
    await startReceiver('late', () => 0, undefined, { initialState: true, integrityPeriodSeconds: 10 }),
    // CONTRACT 4.7: the same points in other bodies, parsed back by the receiver
    await startReceiver('ndjson', () => 0, undefined, undefined, { type: 'ndjson' }),
    await startReceiver('influx-line', () => 0, undefined, undefined, { type: 'influx-line' }),
    await startReceiver('jsonata', () => 0, undefined, undefined, { type: 'jsonata', expression: SLOW_JSONATA }),
    // CONTRACT 4.8: CASDU 14's slow floats (chaos/report.ts), only when they changed enough or were silent 5 s
    await startReceiver('report', () => 0, { casdu: [REPORT_CASDU] }, undefined, undefined, REPORT_SETTINGS),
  ];
  const reportReceiver = receivers[8]!;
  const late = receivers[4]!;
  const flappingPort = Number(new URL(receivers[1]!.url).port);
  webhookProxy = await startProxy(() => flappingPort);
  receivers[1]!.url = `http://127.0.0.1:${webhookProxy.port}/hook`;
  inboundPort = await freePort();
  const setup = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
  await setup.set(`connectors:${ID}:config`, config('chaos run'));
  await setup.set(`connectors:${INBOUND_ID}:config`, inboundConfig());
  await setup.xgroup('CREATE', 'process:updates', `rest-outbound:${ID}`, '0', 'MKSTREAM');
  setup.disconnect();
  main = supervised(() => spawnConnector('main'));
  inbound = supervised(spawnInbound);
  await sleep(1000);

  const faultsEnd = Date.now() + SECONDS * 1000;
  const producer = produce();
  const poster = postLoop();
  // the report producer goes on past the faults, into a quiet tail with one consumer: once a killed
  // replica's entries can no longer be claimed (claim idle time and a claim interval after them)
  let reportUntil = Infinity;
  const reportProducer = produceReport(redisPort, () => Date.now() < reportUntil);
  const flapping = flap(receivers[1]!, () => Date.now() >= faultsEnd);
  // every kind at least once, in a seeded order — also when that takes longer than the fault
  // period (a loaded machine injects fewer) — then seeded picks until the period is over
  const order = [...KINDS].sort(() => schedule() - 0.5);
  let n = 0;
  const addLate = Date.now() + (SECONDS * 1000) / 3;
  while (Date.now() < faultsEnd || n < order.length) {
    if (!late.inConfig && Date.now() >= addLate) {
      late.inConfig = true;
      await withRedis((c) => c.set(`connectors:${ID}:config`, config(`webhook added at ${Date.now()}`)));
      log.push({ at: Date.now(), fault: 'webhook-added' });
      say(`  ${Math.round((Date.now() - faultsEnd) / 1000 + SECONDS)} s: late webhook added (initialState, integrityPeriodSeconds 10) at seq ${produced}`);
    }
    await sleep(between(GAP_MIN, GAP_MAX));
    if (Date.now() >= faultsEnd && n >= order.length) break;
    await inject(n < order.length ? order[n]! : KINDS[Math.floor(schedule() * KINDS.length)]!);
    n++;
  }
  producing = false;
  posting = false;
  await producer;
  await poster;
  await flapping;
  await signal(replica, 'SIGTERM');
  const quietFrom = Date.now() + Math.floor(CLAIM_IDLE_MS * 1.5) + 5000;
  reportUntil = quietFrom + 10_000;
  say(`faults over: ${n} injected, ${produced} entries produced, ${posts.size} POSTs (${acknowledged().length} answered 200), ${main.restarts} outbound and ${inbound.restarts} inbound restarts; settling`);

  // the settle period counts from the last entry appended (the report producer's tail is the last)
  const settleEnd = reportUntil + SETTLE_SECONDS * 1000;
  // the late receiver: everything produced after it was added, and the image as it is now (its next periodic interrogation brings it)
  const complete = (r: Receiver, image: Map<string, unknown>) =>
    r.late !== undefined ? coverage(r).lost === 0 && mismatches(r, image) === 0
      // every seq received (raw holds seqs below `produced` only) needs no count over them all
      : r.filter === undefined ? (r.raw.size >= produced || (r.refusedAtLimit.size > 0 && coverage(r).lost === 0)) && inboundMissing(r) === 0 : coverage(r).lost === 0;
  const settled = async () => {
    await readLimitRefusals();
    const image = await readImage();
    return receivers.every((r) => complete(r, image));
  };
  while (Date.now() < settleEnd && !(await settled())) await sleep(500);
  // the report producer's tail written and every entry acknowledged (delivered, or in a backlog)
  const reportEntries = await reportProducer;
  const pending = async () => readRedis(async (c) => ((await c.xpending('process:updates', `rest-outbound:${ID}`)) as [number])[0]);
  while (Date.now() < settleEnd && (await pending()) !== 0) await sleep(500);
  await sleep(2000);
  main.supervise = false;
  inbound.supervise = false;
  await Promise.all([signal(main.proc, 'SIGTERM'), signal(inbound.proc, 'SIGTERM')]);
  await countDeadLetters();

  const image = await readImage();
  const rows = receivers.map((r) => report(r, image));
  say('');
  printTable(rows);
  // a point the late receiver does not hold as the image does (a failed run), and one it would not hold
  // applying requests as they arrive: which request set it last, when, whether it came after a newer one, the faults since
  for (const r of receivers.filter((x) => x.late !== undefined)) {
    if (r.unplaced > 0) say(`  ${r.name}: ${r.unplaced} requests whose webhook-id gives no stream position`);
    for (const [k, v] of [...image].filter(([key, want]) => r.state.value(key) !== want).slice(0, 5)) {
      say(`  ${r.name}: ${k} holds ${JSON.stringify(r.state.value(k))} (from ${JSON.stringify(r.state.held.get(k)?.at)}), the image ${JSON.stringify(v)}`);
    }
    for (const [k, v] of arrivalMismatches(r, image).slice(0, 5)) {
      const by = r.setBy.get(k);
      const between = by === undefined ? '' : log.filter((l) => l.at >= by.at - KILL_SLACK_MS).map((l) => l.fault).join(',') || 'none';
      say(`  ${r.name}, applying as requests arrive: ${k} would hold ${JSON.stringify(r.arrived.get(k))}, the image ${JSON.stringify(v)}; set by ${by === undefined ? 'nothing' : `${by.id}${by.behind ? ', which came after a newer one,' : ''} ${Math.round((Date.now() - by.at) / 1000)} s before the end; faults since: ${between}`}`);
    }
  }
  const reportRow = await readRedis((c) => checkReport(c, reportReceiver.reportPoints ?? [], quietFrom));
  say(`\nreport (${reportEntries} entries appended): ${JSON.stringify(reportRow)}`);
  const reportOk = reportRow.forbidden === 0 && reportRow.unknown === 0 && reportRow.missingQuiet === 0 && reportRow.extraQuiet === 0 && reportRow.quietExpected > 0 && reportRow.reported < reportRow.entries;
  const inboundRow = await checkInbound();
  const missing = Object.fromEntries(receivers.filter((r) => r.filter === undefined && r.late === undefined).map((r) => [r.name, inboundMissing(r)]));
  say(`\ninbound: ${JSON.stringify(inboundRow)}; acknowledged POSTs missing at a receiver: ${JSON.stringify(missing)}`);
  const inboundOk = inboundRow.acknowledgedLost === 0 && inboundRow.partial === 0 && !inboundRow.keysOfTwoPosts && Object.values(missing).every((m) => m === 0);
  const verdict =
    rows.every((r) => r.lost === 0 && r.duplicatesAfterDedup === 0 && r.idsWithTwoContents === 0 && r.outsideFilter === 0 && (r.imageMismatches === '-' || r.imageMismatches === 0)) &&
    rows[0]!.rawDuplicatesOther === 0 && inboundOk && reportOk && late.interrogations.size > 0 && late.raw.size > 0 && late.unplaced === 0;
  say(`\nfaults: ${FAULTS.map((f) => `${f} ${log.filter((l) => l.fault === f).length}`).join(', ')}`);
  say(`seed ${SEED}: ${verdict ? 'PASS' : 'FAIL'}`);
  say(`CHAOS_RESULT ${JSON.stringify({ seed: SEED, seconds: SECONDS, rate: RATE, produced, faults: log.length, rows, inbound: { ...inboundRow, missing }, report: reportRow, pass: verdict })}`);
  for (const r of receivers) r.server.closeAllConnections();
  await Promise.all(receivers.map((r) => new Promise((resolve) => r.server.close(resolve))));
  await Promise.all([redisProxy.close(), webhookProxy.close()]);
  return verdict ? 0 : 1;
};

run()
  .then(async (code) => {
    await killRedis();
    rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  })
  .catch(async (err: unknown) => {
    process.stderr.write(`chaos: ${err instanceof Error ? err.stack : String(err)}\n`);
    if (main !== undefined) main.supervise = false;
    if (inbound !== undefined) inbound.supervise = false;
    await Promise.all([signal(main?.proc, 'SIGKILL'), signal(inbound?.proc, 'SIGKILL')]);
    await signal(replica, 'SIGKILL');
    await killRedis();
    process.exit(2);
  });
