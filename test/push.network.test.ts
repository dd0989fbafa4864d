import { eventually, runCli } from './helpers/cli';
import { pendingCount, range, usePushHarness } from './helpers/push';
import { Receiver } from './helpers/receiver';

/**
 * CONTRACT 6.7 through the built CLI: with `Webhooks:AllowedNetworks=127.0.0.2/32`, a receiver on
 * 127.0.0.2 gets everything; a webhook named `localhost` (127.0.0.1) and one whose token endpoint
 * is there are refused at every connection — their batches in the backlog as `refused`, naming the
 * address, never retried, nothing sent — and a literal address the rule refuses stops the start.
 */
const { receiver, outbound, produce, r } = usePushHarness();

it('connections checked on the resolved address: allowed delivered, refused dead-lettered as refused naming the address; nothing reaches 127.0.0.1', async () => {
  const allowed = await Receiver.start(undefined, undefined, '127.0.0.2');
  const loopback = await receiver();
  const tokens = await receiver(() => ({ status: 200, headers: { 'Content-Type': 'application/json' } }));
  const behindToken = await Receiver.start(undefined, undefined, '127.0.0.2');
  const named = (u: string) => u.replace('127.0.0.1', 'localhost');
  try {
    const { c, base } = await outbound('guard', [
      { url: allowed.url },
      { url: named(loopback.url) },
      { url: behindToken.url, auth: { oauth2: { tokenUrl: named(tokens.url), clientId: 'c', clientSecret: 's' } } },
    ], { Webhooks__AllowedNetworks: '127.0.0.2/32' });
    await produce(0, 20);
    await eventually(async () => (allowed.points().length >= 20 && (await pendingCount(r.client, 'guard')) === 0 ? true : undefined), 20000, 'delivered and acknowledged');
    expect(allowed.points().map((p) => p.seq)).toEqual(range(0, 20));
    // not one request reached the refused addresses, nor the webhook whose token could not be had
    expect([loopback.requests.length, tokens.requests.length, behindToken.requests.length]).toEqual([0, 0, 0]);
    const list = await runCli(['deadletter', 'list', '--id', 'guard', '--json'], { ConnectionStrings__Datastore: r.redis.url });
    const entries = list.stdout.trim().split('\n').map((l) => JSON.parse(l) as { webhook: number; reason: string; error: string; attempts: number });
    const of = (w: number) => entries.filter((e) => e.webhook === w);
    expect(of(1).length).toBeGreaterThan(0);
    expect(of(1).every((e) => e.reason === 'refused' && e.attempts === 1 && e.error === 'connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks')).toBe(true);
    const tokenHost = new URL(named(tokens.url)).host;
    expect(of(2).length).toBeGreaterThan(0);
    expect(of(2).every((e) => e.reason === 'refused' && e.attempts === 1 && e.error === `token endpoint ${tokenHost}: connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks`)).toBe(true);
    // counted as any refused attempt: dead-lettered, reason refused
    const metrics = await (await fetch(`${base}/metrics`)).text();
    for (const w of ['1', '2']) {
      expect([w, new RegExp(`^webhook_deliveries_total\\{webhook="${w}",[^}]*outcome="deadlettered"\\} [1-9]`, 'm').test(metrics)]).toEqual([w, true]);
      expect([w, new RegExp(`^webhook_deadlettered_total\\{webhook="${w}",[^}]*reason="refused"\\} [1-9]`, 'm').test(metrics)]).toEqual([w, true]);
    }
    // GET /api/webhooks shows why: the refused address as the webhook's last error
    const board = (await (await fetch(`${base}/api/webhooks`)).json()) as { webhooks: Array<{ lastError: string | null; state: string }> };
    expect(board.webhooks.map((w) => w.lastError)).toEqual([
      null, 'connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks', `token endpoint ${tokenHost}: connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks`,
    ]);
    // logged as errors naming the webhook, its host and the address, and why
    const lines = c.logs().filter((l) => l.level === 'error' && l.msg === 'batch dead-lettered to the webhook backlog');
    expect(lines.some((l) => l.webhook === 1 && new URL(String(l.url)).host === new URL(named(loopback.url)).host && l.error === 'connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks')).toBe(true);
    expect(lines.some((l) => l.webhook === 2 && String(l.error).startsWith(`token endpoint ${tokenHost}: connection to 127.0.0.1 refused`))).toBe(true);
    // the operator's replay honours the rule too: refused under it (entries kept), delivered once it allows 127.0.0.1
    await c.stop('SIGTERM');
    const env = { ConnectionStrings__Datastore: r.redis.url };
    const refused = await runCli(['deadletter', 'replay', '--id', 'guard', '--webhook', '1'], { ...env, Webhooks__AllowedNetworks: '127.0.0.2/32' });
    expect([refused.code, refused.stdout]).toEqual([1, expect.stringContaining(`delivered 0, failed ${of(1).length}`)]);
    expect(loopback.requests).toHaveLength(0);
    const replayed = await runCli(['deadletter', 'replay', '--id', 'guard', '--webhook', '1'], { ...env, Webhooks__AllowedNetworks: '127.0.0.0/8' });
    expect([replayed.code, replayed.stdout]).toEqual([0, expect.stringContaining(`delivered ${of(1).length}, failed 0`)]);
    expect(loopback.points().map((p) => p.seq)).toEqual(range(0, 20));
  } finally {
    await allowed.close();
    await behindToken.close();
  }
});

it('a webhook url or token URL that is a literal address the rule refuses: exit 2 naming the field', async () => {
  await r.client.set('connectors:literal:config', JSON.stringify({ webhooks: [{ url: 'http://127.0.0.2:9/ok' }, { url: 'http://169.254.169.254/latest/meta-data' }] }));
  const run = await runCli(['outbound'], { Id: 'literal', ConnectionStrings__Datastore: r.redis.url });
  expect(run.code).toBe(2);
  expect(run.stderr).toContain('webhooks[1].url: the connector may not connect to 169.254.169.254 (blocked address)');
  const listed = await runCli(['outbound'], { Id: 'literal', ConnectionStrings__Datastore: r.redis.url, Webhooks__AllowedNetworks: '10.0.0.0/8' });
  expect(listed.code).toBe(2);
  expect(listed.stderr).toContain('webhooks[0].url: the connector may not connect to 127.0.0.2 (not in Webhooks:AllowedNetworks)');
  const bad = await runCli(['outbound'], { Id: 'literal', ConnectionStrings__Datastore: r.redis.url, Webhooks__AllowedNetworks: '10.0.0.0/8,nowhere' });
  expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining("Webhooks:AllowedNetworks: 'nowhere' is neither a CIDR nor an address")]);
});

it('a configuration change to a literal address the rule refuses is refused and logged; the connector goes on with the one it has', async () => {
  const allowed = await Receiver.start(undefined, undefined, '127.0.0.2');
  try {
    const { c } = await outbound('change', [{ url: allowed.url }], { Webhooks__AllowedNetworks: '127.0.0.2/32' });
    await r.client.set('connectors:change:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], webhooks: [{ url: allowed.url }, { url: 'http://127.0.0.1:9/x' }] }));
    const line = await c.waitForLog((l) => l.msg === 'configuration change is invalid; keeping the current configuration');
    expect(line.errors).toEqual(['webhooks[1].url: the connector may not connect to 127.0.0.1 (not in Webhooks:AllowedNetworks)']);
    await produce(0, 5);
    await eventually(async () => (allowed.points().length >= 5 ? true : undefined), 10000, 'still delivering');
    expect(c.logs().some((l) => l.msg === 'configuration changed; stopping so that the orchestrator restarts the connector')).toBe(false);
  } finally {
    await allowed.close();
  }
});

it('config validate and config set apply the rule to literal addresses; a rule that does not parse stops them and replay, never widens them', async () => {
  const { mkdtempSync, writeFileSync } = require('node:fs') as typeof import('node:fs');
  const dir = mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'guard-'));
  const file = `${dir}/c.json`;
  writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'http://127.0.0.2:9/ok' }, { url: 'http://127.0.0.1:9/x', auth: { oauth2: { tokenUrl: 'http://169.254.169.254/t', clientId: 'c', clientSecret: 's' } } }] }));
  const open = await runCli(['config', 'validate', file]);
  expect([open.code, open.stderr.trim()]).toEqual([2, 'webhooks[1].auth.oauth2.tokenUrl: the connector may not connect to 169.254.169.254 (blocked address)']);
  const listed = await runCli(['config', 'validate', file], { Webhooks__AllowedNetworks: '127.0.0.2/32,169.254.169.254' });
  expect([listed.code, listed.stderr.trim()]).toEqual([2, 'webhooks[1].url: the connector may not connect to 127.0.0.1 (not in Webhooks:AllowedNetworks)']);
  expect((await runCli(['config', 'validate', file], { Webhooks__AllowedNetworks: '127.0.0.0/8,169.254.169.254' })).code).toBe(0);
  // listed whatever else in the file fails: a field of another webhook, a URL that does not parse, a mapping
  const broken = `${dir}/broken.json`;
  writeFileSync(broken, JSON.stringify({
    webhooks: [{ url: 'not a url' }, { url: 'http://[64:ff9b::a9fe:a9fe]/x', maxRequestsPerSecond: -1 }, { url: 'http://127.0.0.2/ok', auth: { oauth2: { tokenUrl: 'http://[::ffff:169.254.169.254]/t', clientId: 'c', clientSecret: 's' } } }],
    mappings: [{ topic: 't' }],
  }));
  const all = await runCli(['config', 'validate', broken]);
  expect(all.code).toBe(2);
  expect(all.stderr).toContain('webhooks[0].url');
  expect(all.stderr).toContain('webhooks[1].maxRequestsPerSecond');
  expect(all.stderr).toContain('webhooks[1].url: the connector may not connect to [64:ff9b::a9fe:a9fe] (blocked address)');
  expect(all.stderr).toContain('webhooks[2].auth.oauth2.tokenUrl: the connector may not connect to [::ffff:a9fe:a9fe] (blocked address)');
  const set = await runCli(['config', 'set', '--id', 'lit', file], { ConnectionStrings__Datastore: r.redis.url });
  expect(set.code).toBe(2);
  expect(await r.client.exists('connectors:lit:config')).toBe(0);
  const typo = { Webhooks__AllowedNetworks: '127.0.0.0/8,169.254.169.254/3x', ConnectionStrings__Datastore: r.redis.url };
  for (const args of [['config', 'validate', file], ['deadletter', 'replay', '--id', 'lit']]) {
    const run = await runCli(args, typo);
    expect([args.join(' '), run.code, run.stderr]).toEqual([args.join(' '), 2, expect.stringContaining("Webhooks:AllowedNetworks: '169.254.169.254/3x' is neither a CIDR nor an address")]);
  }
});

it('an initialState or requested interrogation the rule refuses is dead-lettered refused after one attempt: never retried, the circuit stays closed', async () => {
  const loopback = await receiver();
  const pipe = r.client.pipeline();
  for (let ioa = 1; ioa <= 5; ioa++) pipe.set(`process:image:casdu:1:ioa:${ioa}`, JSON.stringify({ casdu: 1, ioa, type: 36, value: ioa, timestamp: new Date().toISOString() }));
  await pipe.exec();
  const url = loopback.url.replace('127.0.0.1', 'localhost');
  const { c, base } = await outbound('interrogate', [{ url, initialState: true }], { Webhooks__AllowedNetworks: '127.0.0.2/32' });
  const list = async () => {
    const run = await runCli(['deadletter', 'list', '--id', 'interrogate', '--json'], { ConnectionStrings__Datastore: r.redis.url });
    return run.stdout.trim() === '' ? [] : run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { reason: string; attempts: number; error: string; cause?: string });
  };
  // the fault took effect: the initial interrogation's batch was refused by the rule
  const initial = await eventually(async () => ((await list()).length > 0 ? list() : undefined), 20000, 'the initial interrogation dead-lettered');
  expect(initial).toEqual([expect.objectContaining({ reason: 'refused', attempts: 1, cause: 'interrogation', error: 'connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks' })]);
  // a requested one: refused the same way
  expect((await fetch(`${base}/api/webhooks/0/interrogation`, { method: 'POST' })).status).toBe(202);
  const both = await eventually(async () => { const l = await list(); return l.length >= 2 ? l : undefined; }, 20000, 'the requested interrogation dead-lettered');
  expect(both.map((e) => [e.reason, e.attempts, e.cause])).toEqual([['refused', 1, 'interrogation'], ['refused', 1, 'interrogation']]);
  // never retried: no redrive of refused entries, no circuit opened by them, nothing reached the address
  await new Promise((done) => setTimeout(done, 1500));
  const board = (await (await fetch(`${base}/api/webhooks`)).json()) as { webhooks: Array<{ state: string; backlog: number }> };
  expect(board.webhooks[0]).toEqual(expect.objectContaining({ state: expect.not.stringMatching(/open|redriving/), backlog: 2 }));
  expect((await list()).length).toBe(2);
  expect(loopback.requests).toHaveLength(0);
  expect(c.logs().filter((l) => l.msg === 'batch dead-lettered to the webhook backlog' && l.reason === 'exhausted')).toHaveLength(0);
});
