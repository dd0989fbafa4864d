import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { pendingCommand } from '../src/http/inbound/idempotency';
import { redisInboundStore, type StoreSession } from '../src/http/inbound/store';
import { privateRedis } from './helpers/redis';

/**
 * Issue 21: the inbound store port's one live implementation against a private Redis: each step
 * answers a value or the tag of what Redis did (CONTRACT 5.1, 5.1.1, 6.6).
 */
const r = privateRedis();
let redis: Redis;
beforeAll(() => {
  redis = r.client;
});
afterEach(async () => {
  await redis.config('SET', 'maxmemory', '0');
  await redis.flushall();
});

const session = async (over: { waitReplicas?: number; connected?: boolean } = {}): Promise<StoreSession> => {
  const store = redisInboundStore({ redis, isConnected: () => over.connected ?? true, waitReplicas: over.waitReplicas ?? 0, waitTimeoutMs: 100, writer: async () => redis });
  const s = await store.session();
  if (E.isLeft(s)) throw new Error(s.left.tag);
  return s.right;
};

it('no session without a connection: not_connected, nothing sent', async () => {
  const store = redisInboundStore({ redis, isConnected: () => false, waitReplicas: 0, waitTimeoutMs: 100 });
  expect(await store.session()).toEqual(E.left({ tag: 'not_connected' }));
  const pool = redisInboundStore({ redis, isConnected: () => true, waitReplicas: 1, waitTimeoutMs: 100, writer: async () => undefined });
  expect(await pool.session()).toEqual(E.left({ tag: 'not_connected' }));
});

it('the idempotency key: taken; then held by a request under way (409), by another body (reused), or answered (replay); given back', async () => {
  const s = await session();
  expect(await s.takeKey('k', 'h1', 10000)).toEqual(E.right('taken'));
  expect(await s.takeKey('k', 'h1', 10000)).toEqual(E.right({ kind: 'in_progress' }));
  expect(await s.takeKey('k', 'h2', 10000)).toEqual(E.right({ kind: 'reused' }));
  await redis.set('k', JSON.stringify({ state: 'done', hash: 'h1', status: 200, body: '{"ok":1}' }));
  expect(await s.takeKey('k', 'h1', 10000)).toEqual(E.right({ kind: 'replay', status: 200, body: '{"ok":1}' }));
  await s.releaseKey('k');
  expect(await redis.exists('k')).toBe(0);
  // a foreign value under the key counts as another request's
  await redis.set('k', 'not ours');
  expect(await s.takeKey('k', 'h1', 10000)).toEqual(E.right({ kind: 'reused' }));
  const [cmd, ...args] = pendingCommand('k2', 'h', 1);
  await redis.call(cmd, ...args); // a marker about to expire
  await new Promise((res) => setTimeout(res, 5));
  expect(await s.takeKey('k2', 'h', 10000)).toEqual(E.right('taken'));
});

it('the stream check: absent or a stream passes; any other type is not_a_stream', async () => {
  const s = await session();
  expect(await s.checkStream()).toEqual(E.right(undefined));
  await redis.xadd('process:updates', '*', 'a', '1');
  expect(await s.checkStream()).toEqual(E.right(undefined));
  await redis.del('process:updates');
  await redis.set('process:updates', 'x');
  expect(await s.checkStream()).toEqual(E.left({ tag: 'not_a_stream', type: 'string' }));
});

it('exec: applied whole; a command refused at run time is aborted; Redis full is out_of_memory, nothing applied', async () => {
  const s = await session();
  expect(await s.exec([['set', 'a', '1'], ['set', 'b', '2']])).toEqual(E.right(undefined));
  expect(await redis.mget('a', 'b')).toEqual(['1', '2']);
  await redis.set('list', 'x');
  expect(await s.exec([['lpush', 'list', '1']])).toEqual(E.left({ tag: 'aborted', error: expect.stringMatching(/WRONGTYPE/) }));
  await redis.config('SET', 'maxmemory', '1');
  expect(await s.exec([['set', 'c', '3'], ['xadd', 'process:updates', '*', 'a', '1']])).toEqual(E.left({ tag: 'out_of_memory', error: expect.stringMatching(/OOM command not allowed/) }));
  await redis.config('SET', 'maxmemory', '0');
  expect(await redis.exists('c', 'process:updates')).toBe(0);
});

it('confirm: at once without WaitReplicas; with it and no replica, unconfirmed after the wait', async () => {
  expect(await (await session()).confirm()).toEqual(E.right(undefined));
  expect(await (await session({ waitReplicas: 1 })).confirm()).toEqual(E.left({ tag: 'unconfirmed', error: 'WAIT: 0 of 1 replicas', replicas: 1, acked: 0 }));
});
