import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connector, runCli } from './helpers/cli';
import { freePort, privateRedis } from './helpers/redis';

/**
 * Issue 20, case 1: `rest-connector healthcheck` (the image's HEALTHCHECK) probes the address the
 * running connector really listens on — recorded in Http:AddressFile once it listens — whatever
 * port its hostUrls name, passes for a healthy connector of either kind and fails when
 * /health/live does not answer, when the process is gone, and when nothing was recorded.
 */
const r = privateRedis();
const dir = mkdtempSync(join(tmpdir(), 'rc-health-'));

const launch = async (kind: 'inbound' | 'outbound', id: string) => {
  const port = await freePort();
  const file = join(dir, `${id}.address`);
  await r.client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`] }));
  const c = new Connector(kind, { Id: id, ConnectionStrings__Datastore: r.redis.url, Http__AddressFile: file });
  await c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
  return { c, file, port };
};
const check = (file: string) => runCli(['healthcheck'], { Http__AddressFile: file });

it.each(['inbound', 'outbound'] as const)('%s: the record names its real port; the check passes; a stopped process fails it; a graceful stop removes the record', async (kind) => {
  const { c, file, port } = await launch(kind, `hc-${kind}`);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ pid: c.proc.pid, kind, urls: [`http://127.0.0.1:${port}`] });
  expect(await check(file)).toMatchObject({ code: 0, stdout: `${kind} connector live at http://127.0.0.1:${port}\n` });
  c.proc.kill('SIGSTOP'); // alive, but /health/live no longer answers
  try {
    const stopped = await check(file);
    expect([stopped.code, stopped.stderr]).toEqual([1, expect.stringMatching(/health\/live: no answer within 2000 ms/)]);
  } finally {
    c.proc.kill('SIGCONT');
  }
  expect((await check(file)).code).toBe(0);
  expect(await c.stop()).toBe(0);
  expect(existsSync(file)).toBe(false);
  const gone = await check(file);
  expect([gone.code, gone.stderr]).toEqual([1, expect.stringMatching(/no address recorded at .*: the connector is not listening yet, or cannot write there/)]);
});

it('a record left by a killed process fails the check, naming it; a connector that cannot write its record says so and keeps running', async () => {
  const { c, file } = await launch('inbound', 'hc-killed');
  await c.stop('SIGKILL');
  const stale = await check(file);
  expect([stale.code, stale.stderr]).toEqual([1, `rest-connector: the inbound connector that recorded ${file} (process ${c.proc.pid}) is gone\n`]);

  const port = await freePort();
  await r.client.set('connectors:hc-nowhere:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`] }));
  const nowhere = new Connector('inbound', { Id: 'hc-nowhere', ConnectionStrings__Datastore: r.redis.url, Http__AddressFile: join(dir, 'missing-folder', 'x.address') });
  const line = await nowhere.waitForLog((l) => l.msg === 'cannot record the listen address for the healthcheck (Http:AddressFile): the healthcheck will fail');
  expect(line).toMatchObject({ level: 'error', err: expect.stringMatching(/ENOENT/) });
  expect(await nowhere.stop()).toBe(0);
});

it('without Http:AddressFile the check is a usage error (exit 2)', async () => {
  expect(await runCli(['healthcheck'])).toMatchObject({ code: 2, stderr: 'rest-connector: Http:AddressFile is not set: the connector records no address to check\n' });
});
