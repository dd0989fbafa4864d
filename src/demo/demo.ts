/**
 * `npm run demo`: a private redis-server, both connectors on a sample configuration, a sample
 * webhook receiver that prints each batch, and a sample payload posted to the inbound connector
 * every second. Ctrl-C stops everything it started. DEMO_DURATION_SECONDS ends it by itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, createWriteStream } from 'node:fs';
import { createServer as createHttpServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../support/freePort';
import { missingMessage, missingPrograms } from '../../support/prerequisites';
import { BIN_PATH } from '../version';
import { configKey } from '../mapping/keys';

const CLI = BIN_PATH;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (s: string) => process.stdout.write(`${s}\n`);

const post = (url: string, body: string): Promise<{ status: number; text: string }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });

const main = async () => {
  // before anything starts: without redis-server there is no demo, and the message says how to get it
  const missing = missingPrograms(['redis-server']);
  if (missing.length > 0) {
    process.stderr.write(`${missingMessage(missing)}\n`);
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), 'rest-connectors-demo-'));
  const children: ChildProcess[] = [];
  let stopping = false;
  const [redisPort, inPort, outPort, hookPort] = [await freePort(), await freePort(), await freePort(), await freePort()];

  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  redis.on('error', (err) => {
    say(`cannot start redis-server (${err.message}); is it on PATH?`);
    process.exit(1);
  });
  children.push(redis);
  const client = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2, retryStrategy: () => 100 });
  client.on('error', () => undefined);
  await client.ping();

  const receiver = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const points = (JSON.parse(body) as { datapoints: Array<{ casdu: number; ioa: number; value: unknown; timestamp: string }> }).datapoints;
      say(`webhook received batch ${req.headers['webhook-id']} with ${points.length} data points:`);
      for (const p of points) say(`    casdu ${p.casdu} ioa ${p.ioa} value ${JSON.stringify(p.value)} at ${p.timestamp}`);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(hookPort, '127.0.0.1', r));

  const mappings = [
    { name: 'boiler-temp', topic: 'plant-a', casdu: 1, ioa: 1001, type: 36, valuePath: 'sensors.boiler.temp', valueType: 'float', timestampPath: 'ts' },
    { name: 'pump-running', topic: 'plant-a', casdu: 1, ioa: 2001, type: 30, valuePath: 'pumps[0].running', valueType: 'bool', timestampPath: 'ts' },
    { name: 'tap-position', topic: 'plant-a', casdu: 2, ioa: 7, type: 32, valuePath: 'transformer.tap', valueType: 'int' },
  ];
  await client.set(configKey('demo-inbound'), JSON.stringify({ displayName: 'Demo inbound', hostUrls: [`http://127.0.0.1:${inPort}`], mappings }));
  await client.set(configKey('demo-outbound'), JSON.stringify({ displayName: 'Demo outbound', hostUrls: [`http://127.0.0.1:${outPort}`], webhooks: [{ url: `http://127.0.0.1:${hookPort}/hook` }] }));

  const start = (kind: 'inbound' | 'outbound') => {
    const log = createWriteStream(join(dir, `${kind}.log`));
    const c = spawn(process.execPath, [CLI, kind], {
      env: { ...process.env, Id: `demo-${kind}`, ConnectionStrings__Datastore: `127.0.0.1:${redisPort}`, Webhooks__BatchWindowMilliseconds: '200' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    c.stdout!.pipe(log);
    c.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${kind}] ${d.toString()}`));
    c.on('exit', (code) => {
      if (!stopping) say(`${kind} connector exited with ${code}; see ${join(dir, `${kind}.log`)}`);
    });
    children.push(c);
  };
  start('inbound');
  start('outbound');
  for (let i = 0; i < 100; i++) {
    const up = await Promise.all([inPort, outPort].map((p) => post(`http://127.0.0.1:${p}/health/ready`, '').then(() => true, () => false)));
    if (up.every(Boolean)) break;
    await sleep(100);
  }

  say(`redis-server          127.0.0.1:${redisPort} (private, in ${dir})`);
  say(`inbound connector     http://127.0.0.1:${inPort}   (logs: ${join(dir, 'inbound.log')})`);
  say(`outbound connector    http://127.0.0.1:${outPort}   (logs: ${join(dir, 'outbound.log')})`);
  say(`sample webhook        http://127.0.0.1:${hookPort}/hook`);
  say(`operator pages        http://127.0.0.1:${outPort}/  (webhooks, backlogs, data points)   http://127.0.0.1:${inPort}/  (mappings, try a payload)`);
  say('');
  say(`try:  curl -s 'http://127.0.0.1:${outPort}/api/datapoints?casdu=1'`);
  say(`      curl -s -X POST 'http://127.0.0.1:${inPort}/api/datapoints?topic=plant-a' -H 'Content-Type: application/json' -d '{"sensors":{"boiler":{"temp":"hot"}}}'`);
  say('Ctrl-C stops everything.');
  say('');

  let n = 0;
  const traffic = setInterval(() => {
    n++;
    const payload = { sensors: { boiler: { temp: 60 + Math.round(Math.random() * 200) / 10 } }, pumps: [{ running: n % 2 === 0 }], transformer: { tap: (n % 9) - 4 }, ts: new Date().toISOString() };
    post(`http://127.0.0.1:${inPort}/api/datapoints?topic=plant-a`, JSON.stringify(payload)).then(
      (r) => say(`inbound POST #${n} -> ${r.status} ${r.text}`),
      (err: Error) => say(`inbound POST #${n} failed: ${err.message}`),
    );
  }, 1000);

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(traffic);
    say('\nstopping...');
    const connectors = children.filter((c) => c !== redis);
    await Promise.all(connectors.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : (c.once('exit', r), c.kill('SIGTERM'))))));
    receiver.closeAllConnections();
    receiver.close();
    client.disconnect();
    await new Promise((r) => (redis.exitCode !== null ? r(null) : (redis.once('exit', r), redis.kill('SIGTERM'))));
    // the connectors' logs stay where the demo said they are (Redis saved nothing there)
    say(`stopped. The connectors' logs are kept: ${join(dir, 'inbound.log')} and ${join(dir, 'outbound.log')} (rm -r ${dir} when done).`);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  const duration = Number(process.env.DEMO_DURATION_SECONDS);
  if (Number.isFinite(duration) && duration > 0) setTimeout(() => void stop(), duration * 1000);
};

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
