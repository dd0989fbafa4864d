import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { buildInbound } from '../src/runtime/inbound';
import { startRedisServer } from '../support/redisServer';
import { eventually } from './helpers/cli';
import { postJson, request } from './helpers/http';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { freePort, privateRedis } from './helpers/redis';

/** CONTRACT 5.1.1 (issue 11): Idempotency-Key and WaitReplicas against real servers. */
const r = privateRedis();
const SETTINGS = {
  mappings: [
    { name: 'temp', topic: 'plant', casdu: 1, ioa: 1, type: 36, valuePath: 't' },
    { name: 'pos', topic: 'plant', casdu: 1, ioa: 2, type: 32, valuePath: 'p' },
    { name: 'other', topic: 'other', casdu: 2, ioa: 1, type: 36, valuePath: 't' },
  ],
};
let app: InProcess;
const post = (body: unknown, key?: string, topic = 'plant') =>
  postJson(`${app.url}/api/datapoints?topic=${topic}`, body, key === undefined ? {} : { 'Idempotency-Key': key });
const streamLength = () => r.client.xlen('process:updates');

describe('Idempotency-Key', () => {
  beforeAll(async () => {
    app = await startInProcess('inbound', buildInbound, r.redis, SETTINGS, { Http__IdempotencyTtlSeconds: '600' });
  });
  afterAll(() => app.close());
  afterEach(() => r.client.flushall());

  it('a repeated request with the same key and body gets the stored answer, marked replayed, and writes nothing', async () => {
    const first = await post({ t: 21.5, p: 3 }, 'order-1');
    expect([first.status, first.headers['idempotent-replayed']]).toEqual([200, undefined]);
    expect(await streamLength()).toBe(2);
    const again = await post({ t: 21.5, p: 3 }, 'order-1');
    expect([again.status, again.text, again.headers['idempotent-replayed']]).toEqual([200, first.text, 'true']);
    expect(await streamLength()).toBe(2);
    const ttl = await r.client.ttl('connectors:test-connector:idempotency:order-1');
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it('the same key with another body or topic is 422 idempotency_key_reused; nothing is written', async () => {
    expect((await post({ t: 1, p: 1 }, 'k')).status).toBe(200);
    const other = await post({ t: 2, p: 1 }, 'k');
    expect([other.status, other.json().code]).toEqual([422, 'idempotency_key_reused']);
    const otherTopic = await post({ t: 1, p: 1 }, 'k', 'other');
    expect([otherTopic.status, otherTopic.json().code]).toEqual([422, 'idempotency_key_reused']);
    const spaced = await post({ t: 1, p: 1 }, 'k', 'plant&x=1'); // another raw query, the same topic: the same request
    expect(spaced.status).toBe(200);
    expect(await streamLength()).toBe(2);
  });

  it('a 422 is stored too: its retry is replayed and records no second error entry', async () => {
    const bad = await post({ t: 'hot', p: 1 }, 'bad-1');
    expect(bad.status).toBe(422);
    const again = await post({ t: 'hot', p: 1 }, 'bad-1');
    expect([again.status, again.text, again.headers['idempotent-replayed']]).toEqual([422, bad.text, 'true']);
    expect(await r.client.xlen('connectors:test-connector:errors')).toBe(1);
    expect(await streamLength()).toBe(0);
  });

  it('an invalid key is 400 invalid_idempotency_key, checked after unknown_topic', async () => {
    for (const key of ['', 'has space', 'x'.repeat(256), 'tab\there', 'ümlaut']) {
      const reply = await request(`${app.url}/api/datapoints?topic=plant`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key }, body: '{"t":1,"p":1}' }).catch((e: Error) => e);
      // Node refuses to send some of these header values at all; those that go out are refused by the connector
      if (reply instanceof Error) continue;
      expect([key, reply.status, reply.json().code]).toEqual([key, 400, 'invalid_idempotency_key']);
    }
    expect((await post({ t: 1, p: 1 }, 'x'.repeat(255))).status).toBe(200);
    expect((await post({ t: 1, p: 1 }, 'has space', 'nope')).status).toBe(404);
  });

  it('concurrent duplicates write exactly once: the others get the answer or 409 idempotency_key_in_progress', async () => {
    const replies = await Promise.all(Array.from({ length: 30 }, () => post({ t: 5, p: 5 }, 'race')));
    const statuses = replies.map((x) => x.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    for (const x of replies.filter((y) => y.status === 409)) expect(x.json().code).toBe('idempotency_key_in_progress');
    expect(await streamLength()).toBe(2);
    expect((await post({ t: 5, p: 5 }, 'race')).headers['idempotent-replayed']).toBe('true');
  });

  it('a write of unknown outcome (the connection lost after EXEC was sent) can be retried with its key: it is written once', async () => {
    // a proxy that forwards everything, and once armed, drops the connection as soon as an EXEC has gone through
    const proxyPort = await freePort();
    let armed = false;
    const proxy = createServer((client) => {
      const upstream = connect(r.redis.port, '127.0.0.1');
      let dropping = false;
      client.on('data', (d: Buffer) => {
        if (armed && /\$4\r\nexec\r\n/i.test(d.toString('latin1'))) {
          armed = false;
          dropping = true;
        }
        upstream.write(d);
      });
      upstream.on('data', (d: Buffer) => (dropping ? (client.destroy(), upstream.destroy()) : client.write(d)));
      const end = () => (client.destroy(), upstream.destroy());
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
    const viaProxy = await startInProcess('inbound', buildInbound, r.redis, SETTINGS, { ConnectionStrings__Datastore: `127.0.0.1:${proxyPort}` });
    try {
      const send = () => postJson(`${viaProxy.url}/api/datapoints?topic=plant`, { t: 7, p: 7 }, { 'Idempotency-Key': 'unknown-1' });
      armed = true;
      const lost = await send();
      expect([lost.status, lost.json().detail]).toEqual([503, expect.stringMatching(/outcome is unknown/)]);
      expect(await streamLength()).toBe(2); // it was applied
      const retry = await eventually(async () => {
        const x = await send();
        return x.status === 200 ? x : undefined;
      }, 10000, 'the retry is answered (once reconnected)');
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(await streamLength()).toBe(2);
      // without a key the same loss would leave the caller no safe retry: that is what the key is for
    } finally {
      await viaProxy.close();
      proxy.close();
    }
  });
});

describe('Datastore:WaitReplicas', () => {
  let replica: ChildProcess;
  let replicaPort: number;
  const dir = mkdtempSync(join(tmpdir(), 'rc-replica-'));
  beforeAll(async () => {
    replicaPort = await freePort();
    replica = await startRedisServer(replicaPort, dir, 400, { args: ['--replicaof', '127.0.0.1', String(r.redis.port)] });
    const c = new Redis({ port: replicaPort, host: '127.0.0.1', protocol: 2 });
    await eventually(async () => (/master_link_status:up/.test(await c.info('replication')) ? true : undefined), 10000, 'replica in sync');
    c.disconnect();
    app = await startInProcess('inbound', buildInbound, r.redis, SETTINGS, { Datastore__WaitReplicas: '1', Datastore__WaitTimeoutMilliseconds: '1500' });
  });
  afterAll(async () => {
    await app.close();
    replica.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('a write that reaches a replica (a demoted master) is refused: 503 saying so, never a 200, nothing written', async () => {
    const onReplica = await startInProcess('inbound', buildInbound, r.redis, SETTINGS, { ConnectionStrings__Datastore: `127.0.0.1:${replicaPort}` });
    try {
      const before = await r.client.xlen('process:updates');
      const refused = await postJson(`${onReplica.url}/api/datapoints?topic=plant`, { t: 3, p: 3 });
      expect([refused.status, refused.json().detail]).toEqual([503, 'the data store node is a replica (a failover is under way); nothing was written']);
      expect(onReplica.logs().some((l) => /READONLY/.test(String(l.err)))).toBe(true);
      expect(await r.client.xlen('process:updates')).toBe(before);
    } finally {
      await onReplica.close();
    }
  });

  it('answers 200 once a replica has the write; 503 saying so when none confirms in time; the retry with the key answers 200 once it does', async () => {
    const ok = await post({ t: 1, p: 1 }, 'w-1');
    expect([ok.status, ok.text]).toEqual([200, expect.any(String)]);
    replica.kill('SIGSTOP'); // the replica stops acknowledging
    try {
      const unconfirmed = await post({ t: 2, p: 2 }, 'w-2');
      expect([unconfirmed.status, unconfirmed.json().detail]).toEqual([503, expect.stringMatching(/^the write was applied on the master but not confirmed by 1 replica/)]);
      expect(await r.client.get('process:image:casdu:1:ioa:1')).toContain('"value":2'); // applied on the master
      const stillNot = await post({ t: 2, p: 2 }, 'w-2');
      expect(stillNot.status).toBe(503);
    } finally {
      replica.kill('SIGCONT');
    }
    const confirmed = await eventually(async () => {
      const x = await post({ t: 2, p: 2 }, 'w-2');
      return x.status === 200 ? x : undefined;
    }, 10000, 'confirmed after the replica is back');
    expect(confirmed.headers['idempotent-replayed']).toBe('true');
    expect(await r.client.xlen('process:updates')).toBe(4); // two requests, two points each: nothing written twice
    const m = await request(`${app.url}/metrics`);
    expect(m.text).toMatch(/inbound_requests_total\{outcome="unconfirmed"[^}]*\} 2/);
  });
});
