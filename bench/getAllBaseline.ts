/** The get-all baseline: bare SCAN + MGET + JSON.parse with ioredis, timed here, one result per run. */
import { Redis } from 'ioredis';

const [redisPort, runs] = process.argv.slice(2) as [string, string];
const redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', protocol: 2 });

const once = async (): Promise<{ ms: number; points: number }> => {
  const start = process.hrtime.bigint();
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', 'process:image:casdu:*:ioa:*', 'COUNT', 10000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  let points = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const values = await redis.mget(...keys.slice(i, i + 1000));
    for (const v of values) if (v !== null && JSON.parse(v) !== null) points++;
  }
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, points };
};

(async () => {
  const results = [];
  for (let i = 0; i < Number(runs); i++) results.push(await once());
  process.send?.(results);
  redis.disconnect();
})();
