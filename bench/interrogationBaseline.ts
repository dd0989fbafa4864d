/**
 * The interrogation-1m control: the connector's own image reader (the same SCAN, sort, MGETs and
 * checks as an interrogation) and the same requests (1,000 points each, 4 in flight, bare
 * `node:http` keep-alive), made by this separate process instead of the connector. What it does to
 * the five live receivers' p99 is what the machine's cores cost them — the connector's event loop
 * plays no part in it. Arguments: Redis port, receiver URL. Sends `{ ms, points, requests }` when done.
 */
import { Redis } from 'ioredis';
import { request, Agent } from 'node:http';
import { imageReader } from '../src/streams/image/image';

const [redisPort, url] = process.argv.slice(2) as [string, string];
const IN_FLIGHT = 4;

const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
const post = (body: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });

(async () => {
  const redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', protocol: 2 });
  const start = Date.now();
  const reader = imageReader(redis, { casdu: [[20, 29]] }, 1000);
  const inFlight = new Set<Promise<void>>();
  let points = 0;
  let requests = 0;
  for (;;) {
    const batch = await reader.next();
    if (batch === null) break;
    points += batch.length;
    requests++;
    const sent = post(`{"datapoints":[${batch.join(',')}],"cause":"interrogation"}`);
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  process.send?.({ ms: Date.now() - start, points, requests });
  redis.disconnect();
  agent.destroy();
})().catch((err: unknown) => {
  process.stderr.write(`interrogation baseline failed: ${String(err)}\n`);
  process.exit(1);
});
