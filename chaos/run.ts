/**
 * `npm run chaos`: a bounded, seeded fault-injection run of the push side (issue 9).
 *
 * A private redis-server (append-only, fsync always), a producer appending numbered entries at a
 * steady rate, three webhook receivers — healthy, flapping (503s, connection resets, hangs), slow —
 * and the built outbound connector, supervised like an orchestrator would (restarted when it
 * exits). Meanwhile, from a seeded schedule: SIGKILL and SIGTERM of the connector, configuration
 * changes, SIGKILL and restart of Redis, a second replica that joins and is SIGKILLed. Then the
 * faults stop, every receiver is healthy, and the run waits until they have every entry.
 *
 * Printed per receiver: produced, received, lost, raw duplicates, duplicates left after
 * de-duplication by webhook-id, ids seen with two contents, and where raw duplicates came from (a
 * duplicate counts as "after a SIGKILL" when a process was SIGKILLed between its two copies (or up to
 * 2 s before the first: requests it had already sent still arrive), "after
 * a timeout" when the receiver answered its first copy only after the connector had given up on it).
 * Exit status 0 when lost, duplicates after de-duplication and ids with two contents are 0
 * everywhere and the healthy receiver's raw duplicates all follow a SIGKILL; 1 otherwise.
 *
 * Environment: CHAOS_SECONDS (fault period, default 300), CHAOS_SEED (default: random, printed),
 * CHAOS_RATE (entries/s, default 1500), CHAOS_CLAIM_IDLE_MS (default 60000, the contract's),
 * CHAOS_SETTLE_SECONDS (default 240), CHAOS_FAULT_GAP_MS (pause between faults, `min,max`, default 3000,9000).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../src/runtime/freePort';
import { startRedisServer } from '../src/runtime/redisServer';
import { BIN_PATH } from '../src/version';

const SECONDS = Number(process.env.CHAOS_SECONDS ?? 300);
const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RATE = Number(process.env.CHAOS_RATE ?? 1500);
const CLAIM_IDLE_MS = Number(process.env.CHAOS_CLAIM_IDLE_MS ?? 60000);
const SETTLE_SECONDS = Number(process.env.CHAOS_SETTLE_SECONDS ?? 240);
const [GAP_MIN, GAP_MAX] = (process.env.CHAOS_FAULT_GAP_MS ?? '3000,9000').split(',').map(Number) as [number, number];
const ID = 'chaos';
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
const random = prng(SEED);
const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

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

// --- receivers ---------------------------------------------------------------------------------

type Mode = 'ok' | '503' | 'reset' | 'hang';

interface Receiver {
  readonly name: string;
  mode: Mode;
  /** Delay of every answer (the slow receiver). */
  delay: () => number;
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
}

const startReceiver = async (name: string, delay: () => number): Promise<Receiver> => {
  const port = await freePort();
  const r: Receiver = {
    name, mode: 'ok', delay, url: `http://127.0.0.1:${port}/hook`, server: undefined as unknown as Server,
    ids: new Map(), raw: new Map(), dedup: new Map(), idsWithTwoContents: 0, repeats: [], firstSeen: new Map(), answeredTooLate: new Set(),
    deadLettered: 0, deadLetterReasons: new Map(),
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
        const seqs = (JSON.parse(body) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq);
        const hash = createHash('sha256').update(body).digest('hex');
        const now = Date.now();
        for (const s of seqs) r.raw.set(s, (r.raw.get(s) ?? 0) + 1);
        const known = r.ids.get(id);
        if (known === undefined) {
          r.ids.set(id, hash);
          r.firstSeen.set(id, now);
          // the connector gave up on this copy (its timeout, or a stop's deadline): it sends it again, by design
          if (req.socket.destroyed || now - arrived >= TIMEOUT_MS - 50) r.answeredTooLate.add(id);
          for (const s of seqs) r.dedup.set(s, (r.dedup.get(s) ?? 0) + 1);
        } else {
          if (known !== hash) r.idsWithTwoContents++;
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

interface Process {
  proc: ChildProcess;
  readonly name: string;
}

const connectorEnv = (consumer: string) => ({
  PATH: process.env.PATH ?? '',
  Id: ID,
  ConnectionStrings__Datastore: `127.0.0.1:${redisPort}`,
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

const spawnConnector = (consumer: string): ChildProcess =>
  spawn(process.execPath, [BIN_PATH, 'outbound'], { env: connectorEnv(consumer), stdio: ['ignore', 'ignore', 'inherit'] });

/** The main connector, restarted whenever it exits, as an orchestrator would. */
const main: Process & { supervise: boolean } = { proc: undefined as unknown as ChildProcess, name: 'main', supervise: true };
let restarts = 0;
const superviseMain = () => {
  main.proc = spawnConnector('main');
  main.proc.once('exit', () => {
    if (!main.supervise) return;
    restarts++;
    setTimeout(superviseMain, 300);
  });
};
let replica: ChildProcess | undefined;

const exited = (p: ChildProcess) => p.exitCode !== null || p.signalCode !== null;
const signal = (p: ChildProcess | undefined, s: NodeJS.Signals): Promise<void> =>
  new Promise((resolve) => {
    if (p === undefined || exited(p)) return resolve();
    p.once('exit', () => resolve());
    p.kill(s);
  });

// --- producer ----------------------------------------------------------------------------------

let produced = 0;
let producing = true;
const idBase = Date.now();

/**
 * Appends entries with explicit, increasing IDs (`{start}-{seq}`), so that a write whose reply
 * was lost with a Redis crash can be tried again without ever writing the same seq twice: the
 * retry of a write that did land is refused ("equal or smaller"), and counts as written.
 */
const produce = async (): Promise<void> => {
  const redis = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 200 });
  redis.on('error', () => undefined);
  const start = Date.now();
  while (producing) {
    const due = Math.floor(((Date.now() - start) / 1000) * RATE);
    if (due > produced && redis.status === 'ready') {
      const upTo = Math.min(due, produced + 500);
      const pipe = redis.pipeline();
      for (let seq = produced; seq < upTo; seq++) {
        const data = `{"casdu":1,"ioa":${seq % 16777216},"type":36,"value":${seq},"timestamp":"${new Date().toISOString()}","source":"chaos","seq":${seq}}`;
        pipe.xadd('process:updates', 'MAXLEN', '~', '2000000', `${idBase}-${seq + 1}`, 'casdu', '1', 'ioa', String(seq % 16777216), 'source', 'chaos', 'data', data);
      }
      try {
        const replies = (await pipe.exec()) ?? [];
        for (const [err] of replies) {
          if (err !== null && !/equal or smaller/.test(err.message)) throw err;
          produced++;
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

type Fault = 'sigkill' | 'sigterm' | 'config' | 'redis' | 'replica';
const FAULTS: Fault[] = ['sigkill', 'sigterm', 'config', 'redis', 'replica'];
const kills: number[] = [];
const log: Array<{ at: number; fault: string }> = [];

const inject = async (fault: Fault): Promise<void> => {
  log.push({ at: Date.now(), fault });
  say(`  ${new Date().toISOString().slice(11, 19)} ${fault}`);
  switch (fault) {
    case 'sigkill':
      kills.push(Date.now());
      await signal(main.proc, 'SIGKILL');
      break;
    case 'sigterm':
      await signal(main.proc, 'SIGTERM');
      break;
    case 'config': {
      const c = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2, maxRetriesPerRequest: 2 });
      c.on('error', () => undefined);
      try {
        await c.set(`connectors:${ID}:config`, config(`changed at ${Date.now()}`));
      } catch {
        /* Redis away: skipped */
      } finally {
        c.disconnect();
      }
      break;
    }
    case 'redis':
      await killRedis();
      await sleep(between(300, 2000));
      await startRedis();
      break;
    case 'replica':
      if (replica === undefined || exited(replica)) {
        replica = spawnConnector('replica');
        const r = replica;
        setTimeout(() => {
          kills.push(Date.now());
          r.kill('SIGKILL');
        }, between(3000, 15000));
      }
      break;
  }
};

let receivers: Receiver[] = [];
const config = (description: string) =>
  JSON.stringify({ description, hostUrls: ['http://127.0.0.1:0'], webhooks: receivers.map((r) => ({ url: r.url })) });

/** The flapping receiver's phases: mostly healthy, with short spells (within the retry schedule) of 503s, resets and hangs. */
const flap = async (r: Receiver, until: () => boolean): Promise<void> => {
  const modes: Mode[] = ['ok', '503', 'ok', 'reset', 'ok', 'hang'];
  let i = 0;
  while (!until()) {
    r.mode = modes[i++ % modes.length]!;
    await sleep(r.mode === 'ok' ? between(2000, 6000) : between(500, 3000));
  }
  r.mode = 'ok';
};

// --- report ------------------------------------------------------------------------------------

interface Row {
  receiver: string;
  produced: number;
  received: number;
  lost: number;
  rawDuplicates: number;
  duplicatesAfterDedup: number;
  idsWithTwoContents: number;
  rawDuplicatesAfterSigkill: number;
  rawDuplicatesAfterTimeout: number;
  rawDuplicatesOther: number;
  deadLettered: number;
}

const report = (r: Receiver): Row => {
  let lost = 0;
  for (let s = 0; s < produced; s++) if (!r.raw.has(s)) lost++;
  const extra = (m: Map<number, number>) => [...m.values()].reduce((n, c) => n + c - 1, 0);
  let afterKill = 0;
  let afterTimeout = 0;
  let other = 0;
  for (const rep of r.repeats) {
    // a request a process had already sent when it was SIGKILLed can still reach the receiver just
    // after the kill: a kill up to KILL_SLACK_MS before the first copy counts too
    if (kills.some((k) => k >= rep.first - KILL_SLACK_MS && k <= rep.again)) afterKill += rep.points;
    else if (r.answeredTooLate.has(rep.id)) afterTimeout += rep.points;
    else {
      other += rep.points;
      const before = kills.filter((k) => k <= rep.again).map((k) => rep.first - k);
      say(`  ${r.name}: ${rep.points} points again under ${rep.id}, ${rep.again - rep.first} ms after the first copy; nearest kill ${before.length > 0 ? `${Math.min(...before.filter((d) => d >= 0), Infinity)} ms before the first copy` : 'none'}; faults between: ${log.filter((l) => l.at >= rep.first - KILL_SLACK_MS && l.at <= rep.again).map((l) => l.fault).join(',') || 'none'}`);
    }
  }
  return {
    receiver: r.name, produced, received: r.raw.size, lost, rawDuplicates: extra(r.raw), duplicatesAfterDedup: extra(r.dedup),
    idsWithTwoContents: r.idsWithTwoContents, rawDuplicatesAfterSigkill: afterKill, rawDuplicatesAfterTimeout: afterTimeout, rawDuplicatesOther: other,
    deadLettered: r.deadLettered,
  };
};

/** Dead-lettered points per receiver (by URL), with their reasons: what a backlog would hold. */
const countDeadLetters = async (): Promise<void> => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
  try {
    for (const [, fields] of await c.xrange(`connectors:${ID}:deadletter`, '-', '+')) {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
      const r = receivers.find((x) => x.url === f.get('url'));
      if (r === undefined) continue;
      r.deadLettered += (JSON.parse(f.get('body') ?? '{"datapoints":[]}') as { datapoints: unknown[] }).datapoints.length;
      const why = (f.get('error') ?? '').replace(/\d+/g, 'N');
      r.deadLetterReasons.set(why, (r.deadLetterReasons.get(why) ?? 0) + 1);
    }
  } finally {
    c.disconnect();
  }
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
  say(`chaos: seed ${SEED}, ${SECONDS} s of faults at ${RATE} entries/s, claim idle ${CLAIM_IDLE_MS} ms (repeat with CHAOS_SEED=${SEED})`);
  redisPort = await freePort();
  await startRedis();
  receivers = [
    await startReceiver('healthy', () => 0),
    await startReceiver('flapping', () => 0),
    await startReceiver('slow', () => between(200, 1500)),
  ];
  const setup = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
  await setup.set(`connectors:${ID}:config`, config('chaos run'));
  await setup.xgroup('CREATE', 'process:updates', `rest-outbound:${ID}`, '0', 'MKSTREAM');
  setup.disconnect();
  superviseMain();
  await sleep(1000);

  const faultsEnd = Date.now() + SECONDS * 1000;
  const producer = produce();
  const flapping = flap(receivers[1]!, () => Date.now() >= faultsEnd);
  // every kind at least once, in a seeded order, then seeded picks
  const order = [...FAULTS].sort(() => random() - 0.5);
  let n = 0;
  while (Date.now() < faultsEnd) {
    await sleep(between(GAP_MIN, GAP_MAX));
    if (Date.now() >= faultsEnd) break;
    await inject(n < order.length ? order[n]! : FAULTS[Math.floor(random() * FAULTS.length)]!);
    n++;
  }
  producing = false;
  await producer;
  await flapping;
  await signal(replica, 'SIGTERM');
  say(`faults over: ${n} injected, ${produced} entries produced, ${restarts} connector restarts; settling`);

  const settleEnd = Date.now() + SETTLE_SECONDS * 1000;
  while (Date.now() < settleEnd && receivers.some((r) => r.raw.size < produced)) await sleep(500);
  await sleep(2000);
  main.supervise = false;
  await signal(main.proc, 'SIGTERM');
  await countDeadLetters();

  const rows = receivers.map(report);
  say('');
  printTable(rows);
  const verdict =
    rows.every((r) => r.lost === 0 && r.duplicatesAfterDedup === 0 && r.idsWithTwoContents === 0) && rows[0]!.rawDuplicatesOther === 0;
  say(`\nfaults: ${FAULTS.map((f) => `${f} ${log.filter((l) => l.fault === f).length}`).join(', ')}`);
  say(`seed ${SEED}: ${verdict ? 'PASS' : 'FAIL'}`);
  say(`CHAOS_RESULT ${JSON.stringify({ seed: SEED, seconds: SECONDS, rate: RATE, produced, faults: log.length, rows, pass: verdict })}`);
  for (const r of receivers) r.server.closeAllConnections();
  await Promise.all(receivers.map((r) => new Promise((resolve) => r.server.close(resolve))));
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
    main.supervise = false;
    await signal(main.proc, 'SIGKILL');
    await signal(replica, 'SIGKILL');
    await killRedis();
    process.exit(2);
  });
