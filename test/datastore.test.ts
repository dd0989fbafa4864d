import { Writable } from 'node:stream';
import { connectDatastore } from '../src/runtime/datastore';
import { makeLogger } from '../src/runtime/logger';
import { eventually } from './helpers/cli';
import { privateRedis } from './helpers/redis';

/**
 * The data store connection keeps itself alive: ioredis ends a client for good when a Sentinel
 * failover disconnects it in the middle of asking the sentinels for the master (seen in a CI run
 * under load: the stream reader answered "Connection is closed." until the test gave up). Only
 * `close()` may end it.
 */
const r = privateRedis();

it('a client that ended without close() is connected again; after close() it stays closed', async () => {
  const lines: string[] = [];
  const log = makeLogger({}, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }));
  const ds = connectDatastore({ host: '127.0.0.1', port: r.redis.port, protocol: 2 }, 0.1, log);
  await ds.ready();
  ds.client.disconnect(); // what ioredis does by itself on that path: status 'end', no reconnection of its own
  await eventually(() => (ds.client.status === 'end' ? true : undefined), 5000, 'ended');
  await eventually(async () => ((await ds.client.ping().catch(() => undefined)) === 'PONG' ? true : undefined), 5000, 'connected again');
  expect(ds.isConnected()).toBe(true);
  expect(lines.some((l) => l.includes('data store client ended unexpectedly; connecting again'))).toBe(true);
  await ds.close();
  await new Promise((res) => setTimeout(res, 400));
  expect(ds.client.status).toBe('end');
});
