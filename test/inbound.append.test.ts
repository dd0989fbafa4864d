import * as E from 'fp-ts/Either';
import { Redis, type Redis as RedisClient } from 'ioredis';
import { appendMode, refusedForScript } from '../src/http/inbound/appendMode';
import { redisInboundStore, type StoreSession } from '../src/http/inbound/store';
import type { MappedPoint } from '../src/mapping/apply';
import { writeCommands, writePlan } from '../src/mapping/commands';
import type { Mapping } from '../src/mapping/types';
import { buildInbound } from '../src/runtime/inbound';
import { postJson } from './helpers/http';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { eventually } from './helpers/cli';
import { monitored as monitorCommands, privateRedis, readmeAcl } from './helpers/redis';

/**
 * README "How a write reaches Redis", against a private Redis 7: a write's stream entries are
 * appended by one script inside the one MULTI where the connection may run it, and by one XADD
 * each where it may not — the same entries either way, all or nothing either way.
 */
const r = privateRedis();
let client: RedisClient;
const running: InProcess[] = [];
beforeAll(() => {
  client = r.client;
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((a) => a.close()));
  await client.config('SET', 'maxmemory', '0');
  await client.call('ACL', 'DELUSER', 'noeval');
  await client.flushall();
});

const MAPPINGS = [
  { name: 'temp', topic: 'edge', casdu: 5, ioa: 1, type: 36, valuePath: 'readings[name=temp].value', timestampPath: 'ts' },
  { name: 'state', topic: 'edge', casdu: 5, ioa: 2, type: 1, valuePath: 'state', valueType: 'bool', valueMap: { RUN: true, STOP: false }, timestampPath: 'ts' },
];
const BODY = [1, 2, 3].map((m) => ({ ts: `2026-11-27T08:0${m}:00Z`, state: m === 3 ? 'STOP' : 'RUN', readings: [{ name: 'temp', value: 20 + m }] }));
const url = '/api/datapoints?topic=edge';
/** The README's ACL line without `+eval`: what an installation set up before it had it. */
const NO_EVAL = readmeAcl('noeval', 'pw').filter((a) => a !== '+eval');

const start = async (user?: string): Promise<InProcess> => {
  const env: Record<string, string> = user === undefined ? {} : { ConnectionStrings__Datastore: `${r.redis.url},user=${user},password=pw` };
  const app = await startInProcess('inbound', buildInbound, r.redis, { mappings: MAPPINGS }, env);
  running.push(app);
  return app;
};
const told = (app: InProcess, by: 'script' | 'XADD') =>
  eventually(() => app.logs().find((l) => String(l.msg).startsWith(by === 'script' ? 'stream entries are appended by one script' : 'stream entries are appended one XADD each')), 20000, `told: ${by}`);

const monitored = <A>(f: () => Promise<A>) => monitorCommands(client, f);
const count = (commands: string[], name: string) => commands.filter((c) => c === name).length;
/** Every entry's fields, in stream order, without the ids. */
const entries = async () => (await client.xrange('process:updates', '-', '+')).map(([, fields]) => fields);

it('by script where EVAL is allowed, one XADD each where not: the same entries, fields and order; one MULTI/EXEC either way', async () => {
  const scripted = await start();
  await told(scripted, 'script');
  const a = await monitored(() => postJson(`${scripted.url}${url}`, BODY));
  expect(a.result.status).toBe(200);
  expect([count(a.commands, 'multi'), count(a.commands, 'exec'), count(a.commands, 'eval'), count(a.commands, 'xadd')]).toEqual([1, 1, 1, 6]);
  const byScript = await entries();
  const image = await client.mget('process:image:casdu:5:ioa:1', 'process:image:casdu:5:ioa:2');
  await client.flushall();

  await client.call('ACL', ...NO_EVAL);
  const plain = await start('noeval');
  const line = await told(plain, 'XADD');
  expect(line).toMatchObject({ level: 'info', connection: 'rest-connectors:main', reason: expect.stringMatching(/NOPERM/) });
  expect(await told(scripted, 'script')).toMatchObject({ level: 'info', connection: 'rest-connectors:main' });
  const b = await monitored(() => postJson(`${plain.url}${url}`, BODY));
  expect(b.result.json()).toEqual(a.result.json());
  expect([count(b.commands, 'multi'), count(b.commands, 'exec'), count(b.commands, 'eval'), count(b.commands, 'xadd')]).toEqual([1, 1, 0, 6]);
  expect(await entries()).toEqual(byScript);
  expect(byScript.map((f) => f.slice(0, 6))).toEqual([1, 2, 1, 2, 1, 2].map((ioa) => ['casdu', '5', 'ioa', String(ioa), 'source', 'test-connector']));
  expect(await client.mget('process:image:casdu:5:ioa:1', 'process:image:casdu:5:ioa:2')).toEqual(image);
});

it('EVAL revoked while running: the write refused for it is sent again as XADDs and written once; later writes go as XADDs', async () => {
  await client.call('ACL', ...NO_EVAL, '+eval');
  const app = await start('noeval');
  await told(app, 'script');
  expect((await postJson(`${app.url}${url}`, BODY)).status).toBe(200);
  await client.call('ACL', 'SETUSER', 'noeval', '-eval');
  const again = await monitored(() => postJson(`${app.url}${url}`, BODY));
  expect(again.result.status).toBe(200);
  // the refused MULTI ran nothing (MONITOR shows its EXEC too); the one sent again ran its XADDs
  expect([count(again.commands, 'multi'), count(again.commands, 'exec'), count(again.commands, 'xadd')]).toEqual([2, 2, 6]);
  expect(await client.xlen('process:updates')).toBe(12);
  expect((await told(app, 'XADD'))).toMatchObject({ reason: expect.stringMatching(/EXECABORT.*NOPERM/) });
  const later = await monitored(() => postJson(`${app.url}${url}`, BODY));
  expect([later.result.status, count(later.commands, 'eval'), count(later.commands, 'xadd')]).toEqual([200, 0, 6]);
  expect(await client.xlen('process:updates')).toBe(18);
});

describe('all or nothing with the script (Redis out of memory under noeviction)', () => {
  const mapping = { name: 'm', topic: 't', casdu: 9, ioa: 1, type: 36 } as unknown as Mapping;
  const points: MappedPoint[] = Array.from({ length: 50 }, (_, i) => {
    const point = { casdu: 9, ioa: i % 5, type: 36 as const, value: i, timestamp: '2026-11-27T00:00:00.000Z', source: 's' };
    return { mapping, point, json: JSON.stringify(point) };
  });
  const session = async (): Promise<StoreSession> => {
    const store = redisInboundStore({ redis: client, isConnected: () => true, waitReplicas: 0, waitTimeoutMs: 100 });
    await eventually(async () => {
      const s = await store.session();
      return E.isRight(s) && s.right.appendsByScript === true ? true : undefined;
    }, 20000, 'probed');
    const s = await store.session();
    if (E.isLeft(s)) throw new Error(s.left.tag);
    return s.right;
  };
  const used = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);

  it('a traced write: the script gives every entry the traceparent, as the XADDs do; more than one script in one MULTI', async () => {
    const s = await session();
    const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const many = Array.from({ length: 10_001 }, (_, i) => points[i % points.length]!);
    for (const byScript of [true, false]) expect(await s.exec(writeCommands(many, 's', 100_000, TP, byScript))).toEqual(E.right(undefined));
    const all = await entries();
    expect(all).toHaveLength(20_002);
    expect(all.slice(0, 10_001)).toEqual(all.slice(10_001));
    expect(all[10_000]).toEqual(['casdu', '9', 'ioa', '0', 'source', 's', 'data', many[10_000]!.json, 'traceparent', TP]);
  });

  it('Redis full before the EXEC: the MULTI with its script is refused whole, nothing written', async () => {
    const s = await session();
    await client.config('SET', 'maxmemory', '1');
    expect(await s.exec(writeCommands(points, 's', 1000, undefined, true))).toEqual(E.left({ tag: 'out_of_memory', error: expect.stringMatching(/OOM/) }));
    // a MULTI of the script alone too: Redis refuses what is queued while it is full
    expect(await s.exec(writeCommands(points, 's', 1000, undefined, true).slice(1))).toEqual(E.left({ tag: 'out_of_memory', error: expect.stringMatching(/OOM/) }));
    await client.config('SET', 'maxmemory', '0');
    expect([await client.exists('process:updates'), (await client.keys('process:image:*')).length]).toEqual([0, 0]);
  });

  it('memory crossing the limit during the EXEC does not stop the script after the MSET: Redis 7 decides once for the whole EXEC', async () => {
    const s = await session();
    await client.config('SET', 'maxmemory', String((await used()) + 500_000));
    // the first command takes 2 MB, past the limit; the MSET and the script come after it
    const grow: readonly [string, ...string[]] = ['setrange', 'filler', '2000000', 'x'];
    expect(await s.exec([grow, ...writeCommands(points, 's', 1000, undefined, true)])).toEqual(E.right(undefined));
    expect(await used()).toBeGreaterThan(Number((await client.config('GET', 'maxmemory') as string[])[1]));
    expect([await client.xlen('process:updates'), (await client.keys('process:image:*')).length]).toEqual([50, 5]);
  });
});

it('a connection that closes forgets its probe: XADDs until the probe on the new connection answers; the probe is no write (Redis full does not refuse it)', async () => {
  await client.config('SET', 'maxmemory', '1');
  const c = new Redis({ port: r.redis.port, host: '127.0.0.1', protocol: 2, connectionName: 'probed', retryStrategy: () => 50 });
  c.on('error', () => undefined);
  const lines: string[] = [];
  try {
    const mode = appendMode(c, { info: (_f, msg) => lines.push(msg) });
    await eventually(() => (mode.scripted() ? true : undefined), 20000, 'probed');
    const closed = new Promise<boolean>((resolve) => c.once('close', () => resolve(mode.scripted())));
    await client.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    expect(await closed).toBe(false);
    await eventually(() => (mode.scripted() ? true : undefined), 20000, 'probed again');
    // the log says how entries are appended when that changes, not at every connect
    expect(lines).toHaveLength(1);
    mode.refused('EXECABORT … NOPERM … \'eval\'');
    expect([mode.scripted(), lines.length]).toEqual([false, 2]);
  } finally {
    c.disconnect();
  }
});

it('a probe sent on a connection that closes before it answers says nothing; the next connection probes again', async () => {
  // under a pause of every command Redis holds the probe (the client skips the ready check, as ioredis may)
  await client.call('CLIENT', 'PAUSE', 1500, 'ALL');
  const c = new Redis({ port: r.redis.port, host: '127.0.0.1', protocol: 2, enableReadyCheck: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  c.on('error', () => undefined);
  const lines: string[] = [];
  try {
    const mode = appendMode(c, { info: (_f, msg) => lines.push(msg) });
    await new Promise((resolve) => c.once('ready', resolve));
    const closed = new Promise((resolve) => c.once('close', resolve));
    c.disconnect(true); // the held probe fails with its connection; ioredis connects again
    await closed;
    expect(mode.scripted()).toBe(false);
    await eventually(() => (mode.scripted() ? true : undefined), 20000, 'probed on the next connection, once the pause is over');
    expect(lines).toEqual(["stream entries are appended by one script a write (Redis 7, EVAL and the script's XADD allowed)"]);
  } finally {
    c.disconnect();
  }
});

it('a transaction refused for its EVAL alone is told by the commands Redis refused to queue, not by any text', async () => {
  await client.call('ACL', 'SETUSER', 'noeval', 'on', '>pw', '~*', '+@all', '-eval');
  await client.call('ACL', 'SETUSER', 'nomset', 'on', '>pw', '~*', '+@all', '-mset');
  try {
    for (const [user, expected] of [['noeval', true], ['nomset', false]] as const) {
      const c = new Redis({ port: r.redis.port, host: '127.0.0.1', protocol: 2, username: user, password: 'pw' });
      try {
        const err = await c.multi([['mset', 'a', '1'], ['eval', 'return 1', '0']]).exec().then(() => undefined, (e: unknown) => e);
        expect([user, err instanceof Error && /EXECABORT/.test(err.message), refusedForScript(err)]).toEqual([user, true, expected]);
        // the EVAL and the MSET both refused: not the EVAL alone
        const both = await c.multi([['eval', 'return 1', '0'], ['mset', 'a', '1']]).exec().then(() => undefined, (e: unknown) => e);
        if (user === 'noeval') expect(refusedForScript(both)).toBe(true);
      } finally {
        c.disconnect();
      }
    }
    // an error with the words in it, that Redis did not answer, is not one
    expect(refusedForScript(new Error("EXECABORT Transaction discarded because of previous errors.; NOPERM … 'eval'"))).toBe(false);
    expect(refusedForScript(undefined)).toBe(false);
  } finally {
    await client.call('ACL', 'DELUSER', 'noeval', 'nomset');
  }
});

it('XADD revoked after the probe: the script fails inside the EXEC after the MSET — told as outcome unknown, never "nothing written"; no script is sent again on that connection', async () => {
  await client.call('ACL', ...readmeAcl('latexadd', 'pw'));
  const c = new Redis({ port: r.redis.port, host: '127.0.0.1', protocol: 2, username: 'latexadd', password: 'pw' });
  const mapping = { name: 'm', topic: 't', casdu: 9, ioa: 1, type: 36 } as unknown as Mapping;
  const points: MappedPoint[] = [1, 2, 3].map((ioa) => {
    const point = { casdu: 9, ioa, type: 36 as const, value: ioa, timestamp: '2026-11-27T00:00:00.000Z', source: 's' };
    return { mapping, point, json: JSON.stringify(point) };
  });
  try {
    const store = redisInboundStore({ redis: c, isConnected: () => true, waitReplicas: 0, waitTimeoutMs: 100 });
    const session = async () => {
      const s = await store.session();
      if (E.isLeft(s)) throw new Error(s.left.tag);
      return s.right;
    };
    await eventually(async () => ((await session()).appendsByScript === true ? true : undefined), 20000, 'probed: the script is allowed');
    await client.call('ACL', 'SETUSER', 'latexadd', '-xadd');
    const first = await (await session()).exec(writePlan(points, 's', 1000));
    expect(first).toEqual(E.left({ tag: 'unknown_outcome', partly: 'eval', error: expect.stringMatching(/^eval failed inside the transaction while the other commands were applied: ERR The user executing the script can't run this command/) }));
    // the fault took effect as the contract fears: the image changed without its entries
    expect([(await client.keys('process:image:*')).length, await client.exists('process:updates')]).toEqual([3, 0]);
    await client.flushall();
    // from now on XADDs, which Redis refuses when they are queued: nothing of the write runs
    expect((await session()).appendsByScript).toBe(false);
    const second = await (await session()).exec(writePlan(points, 's', 1000));
    expect(second).toEqual(E.left({ tag: 'aborted', error: expect.stringMatching(/NOPERM.*'xadd'/) }));
    expect([(await client.keys('process:image:*')).length, await client.exists('process:updates')]).toEqual([0, 0]);
  } finally {
    c.disconnect();
    await client.call('ACL', 'DELUSER', 'latexadd');
  }
});
