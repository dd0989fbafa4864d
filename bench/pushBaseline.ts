/**
 * The push baseline: a bare loop that reads process:updates with XREAD BLOCK and POSTs each read
 * to every receiver with axios, then reads again — read, post and wait, in series.
 */
import axios from 'axios';
import { Agent } from 'node:http';
import { Redis } from 'ioredis';

const [redisPort, ...urls] = process.argv.slice(2) as [string, ...string[]];
const redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', protocol: 2 });
const client = axios.create({ httpAgent: new Agent({ keepAlive: true }), timeout: 10000, validateStatus: () => true });
let stopping = false;
process.on('SIGTERM', () => (stopping = true));

(async () => {
  let last = '$';
  while (!stopping) {
    const reply = (await redis.xread('COUNT', 1000, 'BLOCK', 500, 'STREAMS', 'process:updates', last)) as Array<[string, Array<[string, string[]]>]> | null;
    if (reply === null) continue;
    const entries = reply[0]![1];
    last = entries[entries.length - 1]![0];
    // a Buffer, as the connector posts: given a string, axios runs JSON.parse on it for every request as a check
    const body = Buffer.from(JSON.stringify({ datapoints: entries.map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]!) as unknown) }));
    await Promise.all(urls.map((u) => client.post(u, body, { headers: { 'Content-Type': 'application/json' } }).catch(() => undefined)));
  }
  redis.disconnect();
  process.exit(0);
})();
process.send?.('ready');
