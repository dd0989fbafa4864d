import type { Redis } from 'ioredis';
import { Connector, eventually } from './cli';
import { Receiver } from './receiver';
import { privateRedis, type TestRedis } from './redis';

/** Short windows, timeouts and retry intervals, so that fault tests run in seconds. */
export const FAST = {
  Webhooks__BatchWindowMilliseconds: '50',
  Webhooks__TimeoutMilliseconds: '300',
  Webhooks__MaxAttempts: '3',
  Datastore__StreamPollIntervalMilliseconds: '100',
  Datastore__ConnectionRetrySeconds: '0.2',
  Datastore__ConfigPollIntervalMilliseconds: '200',
};

/**
 * Outbound connectors (the built CLI), webhook receivers and a producer around one test Redis;
 * `cleanup` kills what is left after each test.
 */
export const pushHarness = (getRedis: () => TestRedis, getClient: () => Redis) => {
  const running: Connector[] = [];
  const receivers: Receiver[] = [];
  return {
    running,
    receiver: async (answer?: Parameters<typeof Receiver.start>[0]) => {
      const r = await Receiver.start(answer);
      receivers.push(r);
      return r;
    },
    /** Starts an outbound connector with these webhooks and waits until its pipeline reads. */
    outbound: async (id: string, webhooks: object[], env: Record<string, string> = {}, extraConfig: object = {}) => {
      const client = getClient();
      // port 0, and the address the connector reports: a free port looked up beforehand could be
      // taken by another test file's process before the connector binds it (a CI run saw EADDRINUSE)
      await client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], webhooks, ...extraConfig }));
      const c = new Connector('outbound', { Id: id, ConnectionStrings__Datastore: getRedis().url, Datastore__ConsumerName: `${id}-a`, ...FAST, ...env });
      running.push(c);
      const listening = await c.waitForLog((l) => l.msg === 'outbound connector listening');
      await c.waitForLog((l) => l.msg === 'push pipeline started');
      // this connector's own group: another test's connector on the same stream has one too, and a
      // connector that starts from the latest entry must have made its group before the test appends
      // (a CI run saw entries appended before it, never read)
      const group = `rest-outbound:${id}`;
      await eventually(async () => ((await client.xinfo('GROUPS', 'process:updates')) as unknown[][]).some((g) => g[g.indexOf('name') + 1] === group) || undefined);
      return { c, base: String((listening.addresses as string[])[0]) };
    },
    /** Appends entries as the inbound connector does; `seq` in data identifies each. */
    produce: async (from: number, count: number): Promise<string[]> => {
      const pipe = getClient().pipeline();
      for (let seq = from; seq < from + count; seq++) {
        const point = { casdu: 1, ioa: seq, type: 36, value: seq, timestamp: new Date().toISOString(), source: 'producer', seq };
        pipe.xadd('process:updates', '*', 'casdu', '1', 'ioa', String(seq), 'source', 'producer', 'data', JSON.stringify(point));
      }
      return (await pipe.exec())!.map(([, id]) => String(id));
    },
    cleanup: async () => {
      await Promise.all(running.splice(0).map((c) => c.stop('SIGKILL')));
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await getClient().flushall();
    },
  };
};

export const seqs = (points: Array<Record<string, unknown>>) => points.map((p) => p.seq as number);
export const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
export const pendingCount = async (client: Redis, id: string) => ((await client.xpending('process:updates', `rest-outbound:${id}`)) as [number])[0];

/** A harness with its private Redis for the whole test file, cleaned after every test. */
export const usePushHarness = () => {
  const r = privateRedis();
  const h = pushHarness(() => r.redis, () => r.client);
  afterEach(() => h.cleanup());
  return { ...h, r };
};
