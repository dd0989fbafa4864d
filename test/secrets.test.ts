import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connector, eventually, runCli } from './helpers/cli';
import { postJson, request } from './helpers/http';
import { Receiver } from './helpers/receiver';
import { freePort, privateRedis } from './helpers/redis';

/**
 * No secret anywhere (CONTRACT 6.2, 6.5): both connectors and the operator commands run with
 * marked secrets in every place one can be configured — header values, signing secrets, query
 * tokens of webhook URLs, API keys (right and wrong) — through deliveries, retries, dead letters,
 * refusals, an invalid configuration change and config errors. Then every line they wrote
 * (stdout and stderr), every dead-letter entry and every metric is searched for the marks.
 */
const MARK = 'S3CR3T';
const marks = Array.from({ length: 9 }, (_, i) => `${MARK}-${i}`);

const r = privateRedis();
const dir = mkdtempSync(join(tmpdir(), 'rc-secrets-'));

it('no configured secret, key or token appears in logs, stderr, dead letters or metrics', async () => {
  const { redis, client } = r;
  const healthy = await Receiver.start();
  const failing = await Receiver.start(() => ({ status: 503 }));
  const refusing = await Receiver.start(() => ({ status: 401 }));
  const outPort = await freePort();
  const inPort = await freePort();
  const webhooks = [
    { url: `${healthy.url}?token=${marks[0]}`, headers: { Authorization: `Bearer ${marks[1]}` }, secret: [marks[2], `whsec_${Buffer.from(marks[3]!).toString('base64')}`] },
    { url: `${failing.url}?sig=${marks[4]}&x=1`, headers: { 'X-Api-Token': marks[5]! } },
    { url: `${refusing.url}?access_token=${marks[6]}` },
  ];
  await client.set('connectors:sec-out:config', JSON.stringify({ logLevel: 'Trace', hostUrls: [`http://127.0.0.1:${outPort}`], webhooks }));
  await client.set('connectors:sec-in:config', JSON.stringify({
    logLevel: 'Trace', hostUrls: [`http://127.0.0.1:${inPort}`],
    mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }],
  }));
  const env = {
    ConnectionStrings__Datastore: redis.url,
    Authentication__ApiKeys: `${marks[7]},other-key`,
    Datastore__ConfigPollIntervalMilliseconds: '100',
    Datastore__StartFromLatest: 'false',
    Webhooks__BatchWindowMilliseconds: '20',
    Webhooks__MaxAttempts: '2',
    Webhooks__TimeoutMilliseconds: '500',
  };
  const outbound = new Connector('outbound', { ...env, Id: 'sec-out' }, dir);
  const inbound = new Connector('inbound', { ...env, Id: 'sec-in' }, dir);
  const cli: string[] = [];
  try {
    await Promise.all([outbound, inbound].map((c) => c.waitForLog((l) => String(l.msg).endsWith('connector listening'))));
    const key = { Authorization: `Bearer ${marks[7]}` };
    expect((await postJson(`http://127.0.0.1:${inPort}/api/datapoints?topic=t`, { v: 1 }, key)).status).toBe(200);
    expect((await postJson(`http://127.0.0.1:${inPort}/api/datapoints?topic=t`, { v: 'x' }, key)).status).toBe(422);
    expect((await postJson(`http://127.0.0.1:${inPort}/api/datapoints?topic=t`, { v: 1 }, { 'X-Api-Key': marks[8]! })).status).toBe(401);
    expect((await request(`http://127.0.0.1:${outPort}/api/datapoints`, { headers: key })).status).toBe(200);
    // delivered to 0, retried then dead-lettered at 1, refused and dead-lettered at 2
    await eventually(async () => ((await client.xlen('connectors:sec-out:deadletter')) >= 2 ? true : undefined), 20000, 'two dead letters');
    expect(healthy.delivered().length).toBeGreaterThan(0);
    // an invalid change at run time carrying the same secrets: logged as an error, not applied
    await client.set('connectors:sec-out:config', JSON.stringify({ webhooks: [...webhooks, { url: `ftp://u:${marks[0]}@h/?t=${marks[4]}` }, { url: `https://u:${marks[1]}@h/x?t=${marks[6]}` }] }));
    await outbound.waitForLog((l) => l.msg === 'configuration change is invalid; keeping the current configuration');
    for (const c of [outbound, inbound]) cli.push((await request(`http://127.0.0.1:${c === outbound ? outPort : inPort}/metrics`, { headers: key })).text);
    // the operator commands, on a file with the same secrets
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: `https://u:${marks[2]}@h/?t=${marks[3]}`, headers: { 'Content-Length': marks[5] } }] }));
    const validate = await runCli(['config', 'validate', file]);
    expect(validate.code).toBe(2);
    cli.push(validate.stdout, validate.stderr);
    const get = await runCli(['config', 'get', '--id', 'sec-out'], { ConnectionStrings__Datastore: redis.url });
    expect(get.code).toBe(0); // prints the stored settings on purpose: it is the operator's own command
  } finally {
    await Promise.all([outbound.stop(), inbound.stop()]);
    await Promise.all([healthy.close(), failing.close(), refusing.close()]);
  }
  const deadLetters = (await client.xrange('connectors:sec-out:deadletter', '-', '+')).map(([, fields]) => fields.join(' '));
  expect(deadLetters.join('\n')).toContain(failing.url); // the URL is there, without its query
  const everything = [outbound.stdout, outbound.stderr, inbound.stdout, inbound.stderr, ...cli, ...deadLetters].join('\n');
  expect(outbound.logs().some((l) => l.msg === 'batch dead-lettered to the webhook backlog')).toBe(true);
  expect(everything.length).toBeGreaterThan(10000);
  const found = marks.filter((m) => everything.includes(m));
  expect(found).toEqual([]);
  expect(everything.includes(MARK)).toBe(false);
});
