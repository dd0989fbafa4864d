import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../support/freePort';
import { Connector, eventually, runCli } from './helpers/cli';
import { postJson, request } from './helpers/http';
import { Receiver } from './helpers/receiver';
import { privateRedis, readmeAcl } from './helpers/redis';

/**
 * Issue 11: the README's `ACL SETUSER` line, run as written, gives both connectors and the
 * operator commands everything they use — pull, push with a backlog and its redrive, a claim,
 * idempotency keys, 422s — and nothing more: Redis's ACL log records no refusal, and other keys
 * and commands are refused.
 */
const r = privateRedis();
const running: Connector[] = [];
afterAll(async () => {
  await Promise.all(running.map((c) => c.stop('SIGKILL')));
});

it('the README\'s ACL user runs both connectors and the operator commands, and is refused everything else', async () => {
  await r.client.call('ACL', ...readmeAcl('rest-connectors', 'acl-pw'));
  await r.client.call('ACL', 'LOG', 'RESET');
  const conn = `${r.redis.url},user=rest-connectors,password=acl-pw`;
  const env = { ConnectionStrings__Datastore: conn, Datastore__ConnectionRetrySeconds: '0.2' };
  let down = true;
  const hook = await Receiver.start(() => (down ? { status: 503 } : { status: 200 }));
  try {
    const inPort = await freePort();
    const outPort = await freePort();
    const mappings = [{ name: 'm', topic: 't', casdu: 3, ioa: 1, type: 36, valuePath: 'v' }];
    const set = async (id: string, settings: object, more: Record<string, string> = {}) => {
      const file = join(r.redis.dir, `${id}.json`);
      require('node:fs').writeFileSync(file, JSON.stringify(settings));
      const done = await runCli(['config', 'set', '--id', id, file], { ...env, ...more });
      expect([done.code, done.stderr]).toEqual([0, '']);
    };
    await set('acl-in', { hostUrls: [`http://127.0.0.1:${inPort}`], mappings });
    // with report (CONTRACT 4.8): its state and each batch's decision are written by a script under this user too
    await set('acl-out', { hostUrls: [`http://127.0.0.1:${outPort}`], webhooks: [{ url: hook.url, report: { deadband: [{ absolute: 0 }] } }] });
    expect((await runCli(['config', 'get', '--id', 'acl-in'], env)).code).toBe(0);
    // a dead replica's pending entry, for a claim
    await r.client.xgroup('CREATE', 'process:updates', 'rest-outbound:acl-out', '$', 'MKSTREAM');
    await r.client.xadd('process:updates', '*', 'casdu', '3', 'ioa', '9', 'source', 's', 'data', '{"casdu":3,"ioa":9,"type":36,"value":9}');
    await r.client.call('XREADGROUP', 'GROUP', 'rest-outbound:acl-out', 'dead', 'STREAMS', 'process:updates', '>');

    const inbound = new Connector('inbound', { Id: 'acl-in', ...env, Datastore__WaitReplicas: '0' });
    const outbound = new Connector('outbound', {
      Id: 'acl-out', ...env, Datastore__ConsumerName: 'alive', Datastore__ClaimIdleMilliseconds: '500', Datastore__ClaimIntervalMilliseconds: '300',
      Webhooks__MaxAttempts: '1', Webhooks__CircuitFailureThreshold: '1', Webhooks__ProbeIntervalSeconds: '0.3', Webhooks__BatchWindowMilliseconds: '50',
    });
    running.push(inbound, outbound);
    await inbound.waitForLog((l) => l.msg === 'inbound connector listening');
    await outbound.waitForLog((l) => l.msg === 'push pipeline started');
    const base = `http://127.0.0.1:${inPort}`;
    for (let v = 0; v < 5; v++) expect((await postJson(`${base}/api/datapoints?topic=t`, { v })).status).toBe(200);
    expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 'x' })).status).toBe(422);
    expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 7 }, { 'Idempotency-Key': 'k1' })).status).toBe(200);
    expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 7 }, { 'Idempotency-Key': 'k1' })).headers['idempotent-replayed']).toBe('true');
    const out = `http://127.0.0.1:${outPort}`;
    expect((await request(`${out}/api/datapoints?casdu=3&ioa=1`)).json().datapoints).toHaveLength(1);
    expect((await request(`${out}/api/datapoints`)).json().datapoints).toHaveLength(1);
    // the webhook is down: batches go to its backlog; the claim of dead's entry happens meanwhile
    await outbound.waitForLog((l) => l.msg === 'claimed the pending entries of a consumer that stopped reading');
    await eventually(async () => ((await r.client.xlen('connectors:acl-out:deadletter')) >= 2 ? true : undefined), 10000, 'backlog entries');
    const listed = await runCli(['deadletter', 'list', '--id', 'acl-out'], env);
    expect(listed.code).toBe(0);
    down = false;
    await eventually(() => (hook.points().length >= 7 ? true : undefined), 20000, 'redriven: every point delivered');
    expect((await runCli(['deadletter', 'purge', '--id', 'acl-out'], env)).code).toBe(0);
    expect((await request(`${out}/metrics`)).status).toBe(200);

    // callers with a rate limit (CONTRACT 7.2): the count works under the ACL user — 429 beyond it
    const ratePort = await freePort();
    const keys = { Authentication__ApiKeys: 'gw=k-gw' };
    await set('acl-rate', { hostUrls: [`http://127.0.0.1:${ratePort}`], mappings, callers: { gw: { topics: ['t'], maxRequestsPerSecond: 2 } } }, keys);
    const limited = new Connector('inbound', { Id: 'acl-rate', ...env, ...keys });
    running.push(limited);
    await limited.waitForLog((l) => l.msg === 'inbound connector listening');
    const burst = await Promise.all(Array.from({ length: 10 }, (_, v) => postJson(`http://127.0.0.1:${ratePort}/api/datapoints?topic=t`, { v }, { 'X-Api-Key': 'k-gw' })));
    // ten at once, two a window: at least four refused even if they straddle three windows
    expect(burst.filter((x) => x.status === 429).length).toBeGreaterThanOrEqual(4);
    expect(burst.every((x) => x.status === 200 || x.status === 429)).toBe(true);
    expect(limited.logs().filter((l) => String(l.msg).startsWith("counting a caller's requests failed"))).toEqual([]);

    // nothing the connectors did was refused
    expect(await r.client.call('ACL', 'LOG')).toEqual([]);
    expect([inbound.stderr, outbound.stderr, limited.stderr]).toEqual(['', '', '']);
    // and nothing else is allowed
    const user = new Redis({ port: r.redis.port, host: '127.0.0.1', protocol: 2, username: 'rest-connectors', password: 'acl-pw' });
    try {
      for (const attempt of [() => user.get('other:key'), () => user.flushall(), () => user.call('KEYS', '*'), () => user.call('CONFIG', 'GET', 'dir'), () => user.call('XGROUP', 'DESTROY', 'process:updates', 'rest-outbound:acl-out'), () => user.call('SUBSCRIBE', 'x')]) {
        await expect(attempt()).rejects.toThrow(/NOPERM/);
      }
    } finally {
      user.disconnect();
    }
  } finally {
    await hook.close();
  }
});

/**
 * CONTRACT 5.1: a write is whole or absent under every ACL. The README's line without `+xadd` (the
 * script's `XADD` would be refused inside the `EXEC`, after the `MSET`) and without `+eval` (no
 * script): after every answer, the image and the stream changed together or not at all, and a 503
 * that says nothing was written means nothing was.
 */
describe.each([['+xadd'], ['+eval']])('the README ACL line without %s', (grant) => {
  it('a write is whole or absent: the image and the stream change together; a 503 saying nothing was written means nothing was', async () => {
    const user = `without-${grant.slice(1)}`;
    await r.client.flushall();
    await r.client.call('ACL', ...readmeAcl(user, 'pw').filter((a) => a !== grant));
    await r.client.call('ACL', 'LOG', 'RESET');
    const port = await freePort();
    const mappings = [1, 2].map((ioa) => ({ name: `m${ioa}`, topic: 't', casdu: 5, ioa, type: 36, valuePath: 'v' }));
    await r.client.set('connectors:whole:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings }));
    const inbound = new Connector('inbound', { Id: 'whole', ConnectionStrings__Datastore: `${r.redis.url},user=${user},password=pw`, Datastore__ConnectionRetrySeconds: '0.2' });
    running.push(inbound);
    try {
      await inbound.waitForLog((l) => l.msg === 'inbound connector listening');
      // the probe answered: the append mode is known before the first write
      const mode = await inbound.waitForLog((l) => String(l.msg).startsWith('stream entries are appended'));
      const base = `http://127.0.0.1:${port}/api/datapoints?topic=t`;
      const answers = [await postJson(base, { v: 1 }), await postJson(base, [{ v: 2 }, { v: 3 }, { v: 4 }])];
      const image = (await r.client.keys('process:image:*')).length;
      const stream = await r.client.exists('process:updates') === 1 ? await r.client.xlen('process:updates') : 0;
      // whole or absent: the image changed exactly when the stream did
      expect({ image: image > 0, stream: stream > 0 }).toEqual({ image: stream > 0, stream: image > 0 });
      // and the probe chose XADDs: a script's XADD would be refused (-xadd), or the script could not run (-eval)
      expect(mode.msg).toMatch(/appended one XADD each/);
      if (grant === '+xadd') {
        // the fault took effect: Redis refused the XADDs (queued, so nothing of the MULTI ran)
        const log = (await r.client.call('ACL', 'LOG')) as unknown[][];
        expect(log.some((entry) => entry.includes('xadd'))).toBe(true);
        expect(answers.map((a) => a.status)).toEqual([503, 503]);
        for (const a of answers) expect(a.json().detail).toMatch(/^the data store did not take the write \(.*NOPERM.*'xadd'.*\); nothing was written$/);
        expect([image, stream]).toEqual([0, 0]);
      } else {
        // the fault took effect: the probe's EVAL was refused, and the writes went as XADDs
        const log = (await r.client.call('ACL', 'LOG')) as unknown[][];
        expect(log.some((entry) => entry.includes('eval'))).toBe(true);
        expect(answers.map((a) => a.status)).toEqual([200, 200]);
        expect([image, stream]).toEqual([2, 2 + 3 * 2]);
      }
    } finally {
      await inbound.stop('SIGTERM');
    }
  });
});

it('a caller with a rate, and an ACL user that may not run the count: exit 2 naming the command', async () => {
  await r.client.call('ACL', ...readmeAcl('without-incrby', 'pw').filter((a) => a !== '+incrby'));
  const mappings = [{ name: 'm', topic: 't', casdu: 3, ioa: 1, type: 36, valuePath: 'v' }];
  await r.client.set('connectors:norate:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], mappings, callers: { gw: { topics: ['t'], maxRequestsPerSecond: 2 } } }));
  const env = { Id: 'norate', ConnectionStrings__Datastore: `${r.redis.url},user=without-incrby,password=pw`, Authentication__ApiKeys: 'gw=k-gw' };
  const run = await runCli(['inbound'], env);
  expect(run.code).toBe(2);
  expect(run.stderr).toContain("callers: a caller has maxRequestsPerSecond, and Redis refuses what its count runs: incrby (NOPERM");
  // without a rate, the same user starts
  await r.client.set('connectors:norate:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], mappings, callers: { gw: { topics: ['t'] } } }));
  const plain = new Connector('inbound', env);
  running.push(plain);
  await plain.waitForLog((l) => l.msg === 'inbound connector listening');
  await plain.stop('SIGTERM');
});
