import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../helpers/cli';
import { postJson, request } from '../helpers/http';
import { Receiver } from '../helpers/receiver';
import { freePort, TestRedis } from '../helpers/redis';

/**
 * `npm run test:image` (issue 20): the image built from the Dockerfile as it is and run as an
 * operator would — both connectors from it, against a private Redis and a webhook receiver on this
 * machine (host network), read-only, without capabilities. POST → key → webhook; non-root; the
 * healthcheck passes for each kind on its own port and fails when /health/live does not answer;
 * `stop` → exit 0; no bench, demo or dev dependency inside. Needs a container engine
 * (scripts/image-engine says which and why not); not part of `npm test`.
 */
const root = join(__dirname, '..', '..');
const ENGINE = join(root, 'scripts', 'image-engine');
const TAG = 'localhost/rest-connectors:test';
const run = promisify(execFile);
const engine = async (...args: string[]) => (await run(ENGINE, args, { cwd: root, maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
/** Exit status of a command, its output attached; never throws. */
const status = async (...args: string[]): Promise<{ code: number; out: string }> => {
  try {
    const r = await run(ENGINE, args, { cwd: root });
    return { code: 0, out: `${r.stdout}${r.stderr}` };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
};

let redis: TestRedis;
let receiver: Receiver;
const names: string[] = [];
const suffix = `${process.pid}`;

beforeAll(async () => {
  await engine('check');
  await engine('base');
  await engine('build', TAG);
  redis = await TestRedis.start();
  receiver = await Receiver.start();
}, 600_000);

afterAll(async () => {
  for (const n of names) await status('run', 'rm', '-f', '-t', '0', n);
  receiver?.close();
  await redis?.destroy();
});

/** A connector from the image, on the host network, locked down as the Kubernetes manifests run it. */
const start = async (kind: 'inbound' | 'outbound', id: string): Promise<string> => {
  const name = `rc-${kind}-${suffix}`;
  names.push(name);
  await engine(
    'run', 'run', '-d', '--name', name, '--network', 'host', '--read-only', '--tmpfs', '/tmp', '--cap-drop=all', '--security-opt', 'no-new-privileges',
    '-e', `Id=${id}`, '-e', `ConnectionStrings__Datastore=${redis.url}`, '-e', 'Webhooks__BatchWindowMilliseconds=50',
    TAG, kind,
  );
  return name;
};

it('the image holds dist/src and production dependencies only, and says so in its configuration', async () => {
  const listing = await engine('run', 'run', '--rm', '--entrypoint', 'sh', TAG, '-c', 'ls dist; ls dist/src; test -e node_modules/typescript && echo has-typescript || true');
  expect(listing.split('\n')).toEqual(expect.arrayContaining(['src', 'cli.js', 'healthcheck.js']));
  expect(listing).not.toMatch(/\bbench\b|\bchaos\b|\bdemo\b|has-typescript/);
  const [image] = JSON.parse(await engine('run', 'image', 'inspect', TAG)) as Array<{ Config: Record<string, unknown>; Healthcheck?: unknown }>;
  expect(image!.Config).toMatchObject({ User: 'node', Entrypoint: ['node', 'dist/src/cli.js'], Cmd: ['outbound'] });
  // docker keeps it in Config, podman beside it
  expect(image!.Config.Healthcheck ?? image!.Healthcheck).toMatchObject({ Test: ['CMD', 'node', 'dist/src/healthcheck.js'] });
});

it('both connectors run from it: POST → key → webhook, as a non-root user; the healthcheck follows each to its own port; stop → exit 0', async () => {
  const inPort = await freePort();
  const outPort = await freePort();
  const client = redis.client();
  try {
    await client.set('connectors:img-in:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${inPort}`], mappings: [{ name: 'm', topic: 't', casdu: 4, ioa: 2, type: 36, valuePath: 'v' }] }));
    await client.set('connectors:img-out:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${outPort}`], webhooks: [{ url: receiver.url }] }));
    const outbound = await start('outbound', 'img-out');
    const inbound = await start('inbound', 'img-in');
    for (const [name, port] of [[outbound, outPort], [inbound, inPort]] as const) {
      await eventually(async () => ((await request(`http://127.0.0.1:${port}/health/ready`)).status === 200 ? true : undefined), 30000, `${name} ready`);
      // what the engine's HEALTHCHECK runs, on the port the connector really listens on (not 8080)
      expect(await status('healthcheck', name)).toMatchObject({ code: 0 });
      // the operator page and its scripts, served from the image (CONTRACT 6.8)
      for (const path of ['/', '/ui/page.js', '/ui/model.js']) expect([name, path, (await request(`http://127.0.0.1:${port}${path}`)).status]).toEqual([name, path, 200]);
      const uid = await engine('run', 'exec', name, 'sh', '-c', "awk '/^Uid:/ {print $2}' /proc/1/status");
      expect([name, uid]).toEqual([name, '1000']);
    }
    expect((await postJson(`http://127.0.0.1:${inPort}/api/datapoints?topic=t`, { v: 21.5 })).status).toBe(200);
    expect(JSON.parse((await client.get('process:image:casdu:4:ioa:2'))!)).toMatchObject({ casdu: 4, ioa: 2, value: 21.5, source: 'img-in' });
    await eventually(() => (receiver.points().some((p) => p.ioa === 2 && p.value === 21.5) ? true : undefined), 20000, 'the point at the webhook');

    // /health/live that does not answer (the process stopped) fails the check, even with a decoy on 8080
    let decoy: Server | undefined;
    if ((await request('http://127.0.0.1:8080/health/live').then(() => false, () => true))) {
      decoy = createServer((_q, s) => s.writeHead(200).end('{"status":"ok"}')).listen(8080, '127.0.0.1');
    }
    try {
      await engine('run', 'kill', '--signal', 'STOP', inbound);
      const stopped = await status('healthcheck', inbound);
      expect(stopped.code).not.toBe(0);
      await engine('run', 'kill', '--signal', 'CONT', inbound);
      expect(await status('healthcheck', inbound)).toMatchObject({ code: 0 });
    } finally {
      decoy?.close();
    }

    for (const name of [inbound, outbound]) {
      await engine('run', 'stop', '-t', '10', name);
      expect([name, await engine('run', 'inspect', '--format', '{{.State.ExitCode}}', name)]).toEqual([name, '0']);
    }
  } finally {
    client.disconnect();
  }
});
