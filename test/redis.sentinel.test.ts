import { Redis } from 'ioredis';
import { freePort } from '../support/freePort';
import { Connector, eventually } from './helpers/cli';
import { rmSync } from 'node:fs';
import { makeCerts, startSentinelSet, type SentinelSet } from './helpers/ha';
import { postJson, request } from './helpers/http';
import { Receiver } from './helpers/receiver';

/**
 * Issue 11: a Sentinel set (master, replica, three sentinels) under steady POSTs. Every write
 * answered 200 must be on the master after a graceful failover and after a SIGKILL of the master
 * (with Datastore:WaitReplicas=1); the connectors follow the switch without a restart; push goes
 * on with nothing lost and the lag metric back at 0. The count lost with WaitReplicas=0 is printed.
 */
let set: SentinelSet;
let receiver: Receiver;
const running: Connector[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  set = await startSentinelSet();
  receiver = await Receiver.start();
}, 60000);
afterAll(async () => {
  await Promise.all(running.map((c) => c.stop('SIGKILL')));
  await receiver.close();
  await set.close();
});

const onMaster = async <A>(fn: (r: Redis) => Promise<A>): Promise<A> => {
  const r = new Redis({ port: await set.masterPort(), host: '127.0.0.1', protocol: 2 });
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
};

const start = async (kind: 'inbound' | 'outbound', id: string, settings: object, env: Record<string, string> = {}) => {
  const port = await freePort();
  await onMaster((r) => r.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], ...settings })));
  const c = new Connector(kind, {
    Id: id, ConnectionStrings__Datastore: set.connectionString, Datastore__ConnectionRetrySeconds: '0.2', Datastore__StartFromLatest: 'false', ...env,
  });
  running.push(c);
  await c.waitForLog((l) => l.msg === `${kind} connector listening`, 30000);
  return { c, base: `http://127.0.0.1:${port}` };
};

/** POSTs at about 50 a second, each with its own value; resolves to the values answered 200. */
const load = (base: string, from: number) => {
  let n = from;
  let stop = false;
  const answered = new Map<number, number>();
  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    while (!stop) {
      const v = n++;
      const p = postJson(`${base}/api/datapoints?topic=t`, { v })
        .then((x) => void answered.set(v, x.status))
        .catch(() => void answered.set(v, 0));
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      await sleep(20);
    }
    await Promise.all(inFlight);
  })();
  return {
    stop: async () => {
      stop = true;
      await loop;
      return answered;
    },
  };
};

/** Values answered 200 that are not in the stream of the node the sentinels now name master. */
const missingOnMaster = async (answered: Map<number, number>): Promise<{ ok: number; missing: number[]; statuses: Record<number, number> }> => {
  const entries = await onMaster((r) => r.xrange('process:updates', '-', '+'));
  const stored = new Set(entries.map(([, f]) => (JSON.parse(f[f.indexOf('data') + 1]!) as { value: number }).value));
  const ok = [...answered].filter(([, s]) => s === 200).map(([v]) => v);
  const statuses: Record<number, number> = {};
  for (const s of answered.values()) statuses[s] = (statuses[s] ?? 0) + 1;
  return { ok: ok.length, missing: ok.filter((v) => !stored.has(v)), statuses };
};

const switched = async (from: number) =>
  eventually(async () => {
    const now = await set.masterPort();
    return now !== from ? now : undefined;
  }, 45000, 'the sentinels name another master').catch(async (err: Error) => {
    const s = new Redis({ port: set.sentinels[0]!.port, host: '127.0.0.1', protocol: 2 });
    const state = [await s.call('SENTINEL', 'MASTER', 'mymaster'), await s.call('SENTINEL', 'REPLICAS', 'mymaster')];
    s.disconnect();
    throw new Error(`${err.message}; from ${from}, master ${set.master.port}, replica ${set.replica.port}; sentinel: ${JSON.stringify(state)}`);
  });

it('failover under load: no write answered 200 is lost with WaitReplicas=1 (graceful and SIGKILL); push resumes, nothing lost, lag back to 0', async () => {
  const mappings = { mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] };
  const safe = await start('inbound', 'ha-in', mappings, { Datastore__WaitReplicas: '1', Datastore__WaitTimeoutMilliseconds: '1000' });
  const fast = await start('inbound', 'ha-in0', mappings);
  const out = await start('outbound', 'ha-out', { webhooks: [{ url: receiver.url }] }, { Webhooks__BatchWindowMilliseconds: '50', Webhooks__MaxAttempts: '20' });

  // 1. graceful failover, WaitReplicas=1
  let master: number;
  let l = load(safe.base, 0);
  await sleep(2000);
  master = await set.failover();
  await sleep(3000);
  const graceful = await missingOnMaster(await l.stop());

  // 2. graceful failover back, WaitReplicas=0 (failover detection on): reported, not asserted
  l = load(fast.base, 100000);
  await sleep(2000);
  master = await set.failover(); // the failover back, right after the first
  await sleep(3000);
  const unsafe = await missingOnMaster(await l.stop());

  // 3. SIGKILL of the master, WaitReplicas=1: the sentinels promote the replica after 1 s down
  await eventually(async () => {
    const r = new Redis({ port: master === set.master.port ? set.replica.port : set.master.port, host: '127.0.0.1', protocol: 2 });
    const info = await r.info('replication').finally(() => r.disconnect());
    return /master_link_status:up/.test(info) ? true : undefined;
  }, 30000, 'the replica in sync before the kill');
  l = load(safe.base, 200000);
  await sleep(2000);
  const victim = master === set.master.port ? set.master : set.replica;
  victim.proc.kill('SIGKILL');
  master = await switched(master);
  await sleep(3000);
  const killed = await missingOnMaster(await l.stop());

  process.stdout.write(
    `sentinel failover: graceful, WaitReplicas=1: ${graceful.ok} answered 200, ${graceful.missing.length} missing ${JSON.stringify(graceful.statuses)}; ` +
      `graceful, WaitReplicas=0: ${unsafe.ok} answered 200, ${unsafe.missing.length} missing ${JSON.stringify(unsafe.statuses)}; ` +
      `SIGKILL, WaitReplicas=1: ${killed.ok} answered 200, ${killed.missing.length} missing ${JSON.stringify(killed.statuses)}\n`,
  );
  expect(graceful.missing).toEqual([]);
  expect(killed.missing).toEqual([]);
  expect(graceful.ok).toBeGreaterThan(50);
  expect(killed.ok).toBeGreaterThan(50);

  // the connectors followed every switch without a restart
  for (const { c } of [safe, fast, out]) expect(c.proc.exitCode).toBeNull();
  // push: every entry of the stream the master now holds reaches the webhook
  const entries = await onMaster((r) => r.xrange('process:updates', '-', '+'));
  const undelivered = () => {
    const got = new Set(receiver.points().map((p) => p.value as number));
    return entries.map(([, f]) => (JSON.parse(f[f.indexOf('data') + 1]!) as { value: number }).value).filter((v) => !got.has(v));
  };
  await eventually(() => (undelivered().length === 0 ? true : undefined), 60000, 'every entry delivered').catch((err: Error) => {
    const tail = out.c.logs().slice(-15).map((l) => JSON.stringify(l)).join('\n');
    throw new Error(`${err.message}: ${undelivered().length} of ${entries.length} not delivered (first: ${undelivered().slice(0, 5).join(', ')}); outbound log tail:\n${tail}`);
  });
  await eventually(async () => (/^stream_group_lag(\{[^}]*\})? 0$/m.test((await request(`${out.base}/metrics`)).text) ? true : undefined), 20000, 'lag 0');
  const logs = [...safe.c.logs(), ...fast.c.logs(), ...out.c.logs()];
  expect([safe.c.stderr, fast.c.stderr, out.c.stderr]).toEqual(['', '', '']);
  expect(logs.length).toBeGreaterThan(0);
}, 180000);

it('sentinels with a password of their own: sentinelPassword= reaches them; without it the refusal is logged as an error naming the cause', async () => {
  const guarded = await startSentinelSet({ sentinelPassword: 'sentinel-secret' });
  try {
    const port = await freePort();
    const m = new Redis({ port: await guarded.masterPort(), host: '127.0.0.1', protocol: 2 });
    await m.set('connectors:ha-sp:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] }));
    const without = new Connector('inbound', { Id: 'ha-sp', ConnectionStrings__Datastore: guarded.connectionString, Datastore__ConnectionRetrySeconds: '0.2' });
    running.push(without);
    await eventually(() => (without.logs().some((l) => l.level === 'error' && /NOAUTH|WRONGPASS|Authentication/i.test(String(l.err))) ? true : undefined), 15000, 'the refusal logged');
    expect(without.stderr).toBe('');
    await without.stop('SIGKILL');
    const withPassword = new Connector('inbound', { Id: 'ha-sp', ConnectionStrings__Datastore: `${guarded.connectionString},sentinelPassword=sentinel-secret`, Datastore__ConnectionRetrySeconds: '0.2' });
    running.push(withPassword);
    await withPassword.waitForLog((l) => l.msg === 'inbound connector listening', 30000);
    expect((await postJson(`http://127.0.0.1:${port}/api/datapoints?topic=t`, { v: 4 })).status).toBe(200);
    expect(JSON.parse((await m.get('process:image:casdu:1:ioa:1'))!)).toMatchObject({ value: 4 });
    expect(withPassword.stdout).not.toContain('sentinel-secret');
    m.disconnect();
  } finally {
    await guarded.close();
  }
}, 60000);

it('Sentinel over TLS (ssl=true, sslHost, TlsCaFile): the connector reaches the sentinels and the master over TLS and follows a failover', async () => {
  const certs = makeCerts();
  const tls = await startSentinelSet({ tls: certs });
  try {
    const port = await freePort();
    const m = await tls.masterClient();
    await m.set('connectors:ha-tls:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] }));
    m.disconnect();
    const c = new Connector('inbound', {
      Id: 'ha-tls', ConnectionStrings__Datastore: `${tls.connectionString},ssl=true,sslHost=redis.test`, Datastore__TlsCaFile: certs.ca, Datastore__ConnectionRetrySeconds: '0.2',
    });
    running.push(c);
    await c.waitForLog((l) => l.msg === 'inbound connector listening', 30000);
    const url = `http://127.0.0.1:${port}/api/datapoints?topic=t`;
    expect((await postJson(url, { v: 1 })).status).toBe(200);
    const after = await tls.failover();
    // the connector follows the switch: writes are answered 200 again and land on the new master.
    // (With WaitReplicas=0, a write in the moment between the promotion and the old master's
    // demotion can still be answered 200 by the old master and be lost: what WaitReplicas is for.)
    const n = await tls.masterClient();
    let v = 2;
    await eventually(async () => {
      v++;
      if ((await postJson(url, { v })).status !== 200) return undefined;
      return (JSON.parse((await n.get('process:image:casdu:1:ioa:1')) ?? '{}') as { value?: number }).value === v ? true : undefined;
    }, 20000, 'a write answered 200 and found on the new master');
    expect(await tls.masterPort()).toBe(after);
    n.disconnect();
    expect(c.proc.exitCode).toBeNull();
    expect(c.stderr).toBe('');
  } finally {
    await tls.close();
    rmSync(certs.dir, { recursive: true, force: true });
  }
}, 90000);
