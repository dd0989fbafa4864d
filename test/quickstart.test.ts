import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/freePort';
import { privateRedis } from './helpers/redis';

/**
 * Issue 49: the README's quick start, run as it stands — the block is taken from the README text,
 * so the quick start cannot rot. Declared changes only: the first line (`npm ci && npm run build`)
 * is what `npm test` has already done; ports 8081, 8082 and 9000 and the Redis address are swapped
 * for free ones and a private Redis, in the block and in the example files it names (copied to a
 * directory of the test's own, where the block runs). Then each step's output is checked against
 * the README's "What it prints".
 */
const root = join(__dirname, '..');
const r = privateRedis();

const readmeBlocks = () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const [, script] = /<!-- quick-start:[^>]*-->\n```sh\n([\s\S]*?)```/.exec(section) ?? [];
  const [, printed] = /What it prints[^\n]*\n\n```text\n([\s\S]*?)```/.exec(section) ?? [];
  if (script === undefined || printed === undefined) throw new Error('README has no quick-start block and its output');
  return { script, printed };
};

it('the README quick start runs as written: both connectors, a device, the subscriber gets it, GET reads it back, all stop with 0', async () => {
  const { script, printed } = readmeBlocks();
  const lines = script.split('\n');
  expect(lines[0]).toBe('npm ci && npm run build');
  const [inPort, outPort, hookPort] = [await freePort(), await freePort(), await freePort()];
  const swap = (text: string) => text.replaceAll('8081', String(inPort)).replaceAll('8082', String(outPort)).replaceAll('9000', String(hookPort))
    .replaceAll('localhost:6379', r.redis.url.replace(/^redis:\/\//, ''));
  const dir = mkdtempSync(join(tmpdir(), 'quickstart-'));
  try {
    cpSync(join(root, 'examples'), join(dir, 'examples'), { recursive: true });
    for (const f of readdirSync(join(dir, 'examples'))) writeFileSync(join(dir, 'examples', f), swap(readFileSync(join(dir, 'examples', f), 'utf8')));
    symlinkSync(join(root, 'dist'), join(dir, 'dist'));
    symlinkSync(join(root, 'bin'), join(dir, 'bin'));
    // the rest of the block, as it stands; at the end, wait for the stopped processes
    const body = `${swap(lines.slice(1).join('\n'))}\nwait\n`;
    const run = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const p = spawn('bash', ['-c', body], { cwd: dir, env: { ...process.env, Id: '' }, detached: true });
      let out = '';
      let err = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (err += d.toString()));
      // a step that never finishes (a connector that does not start) fails the test instead of holding it
      const limit = setTimeout(() => process.kill(-p.pid!, 'SIGKILL'), 60_000);
      p.on('close', (code) => {
        clearTimeout(limit);
        resolve({ code, out, err });
      });
    });
    expect([run.code, run.err]).toEqual([0, '']);
    const got = run.out.trim().split('\n');
    // what the README says it prints, in its order: the same lines, with times and webhook-id left open
    const expected = swap(printed).trim().split('\n');
    const pattern = (line: string) => new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replaceAll('…', '[^"]+').replace(/webhook-id=\S+/, 'webhook-id=\\S+')}$`);
    expect(got.map((line, i) => [line, pattern(expected[i] ?? '(nothing more)').test(line)])).toEqual(expected.map((_, i) => [got[i], true]));
    // the logs are where the README says, and the connectors stopped gracefully ('stopped' is the
    // line before exit 0; lines of its parts may be written after it, so not necessarily last)
    for (const kind of ['inbound', 'outbound']) {
      const log = readFileSync(join(dir, `${kind}.log`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { msg: string; level: string });
      expect([kind, log.map((l) => l.msg)]).toEqual([kind, expect.arrayContaining([`${kind} connector listening`, 'stopping', 'stopped'])]);
      expect([kind, log.filter((l) => l.level === 'error')]).toEqual([kind, []]);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);

describe('examples/: configurations a user starts from', () => {
  const files = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.json'));
  const docs = [readFileSync(join(root, 'README.md'), 'utf8'), ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => readFileSync(join(root, 'docs', f), 'utf8'))].join('\n');

  it('holds the quick start\'s two and the five the README promises', () => {
    expect(files.sort()).toEqual(['callers.json', 'cloud-jsonata-oauth2.json', 'device-buffered.json', 'gateway-devices.json', 'influxdb-subscriber.json', 'quickstart-inbound.json', 'quickstart-outbound.json']);
  });

  it.each(files)('%s: config validate says valid (with the authentication callers need), and a page of the docs uses it', async (file) => {
    const { runCli } = await import('./helpers/cli');
    // callers name API keys and a certificate: validated with keys configured, as the connector would run
    const run = await runCli(['config', 'validate', join(root, 'examples', file)], { Authentication__ApiKeys: 'gateway=k1,historian=k2,operator=k3' });
    expect([run.code, run.stderr, run.stdout]).toEqual([0, '', expect.stringMatching(/: valid \(/)]);
    expect(docs).toContain(`examples/${file}`);
  });
});
