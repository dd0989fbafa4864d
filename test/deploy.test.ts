import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_HOST_URL } from '../src/config/managed';
import { PARAMETERS } from '../src/config/startup';
import { makeMetrics } from '../src/telemetry/metrics';
import { GRACE_MS } from '../src/runtime/connector';
import { buildInbound } from '../src/runtime/inbound';
import { buildOutbound } from '../src/runtime/outbound';
import { VERSION } from '../src/version';
import { eventually } from './helpers/cli';
import { postJson, request } from './helpers/http';
import { startInProcess } from './helpers/inProcess';
import { Receiver } from './helpers/receiver';
import { TestRedis } from './helpers/redis';

/**
 * What ships in deploy/ matches the code: the metrics pass `promtool check metrics`, the alert
 * rules pass `promtool test rules`, every dashboard and alert query names a family the connectors
 * export, and the Kubernetes manifests use the image's command, ports, paths and parameter names.
 * promtool comes from Debian's `prometheus` package (.ci/run installs it).
 */
const root = join(__dirname, '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

/** Every series name a connector of `kind` can export (histograms as _bucket/_sum/_count). */
const exportedNames = async (kind: 'outbound' | 'inbound'): Promise<Set<string>> => {
  const json = await makeMetrics({ kind, id: 'x', version: VERSION }).registry.getMetricsAsJSON();
  return new Set(json.flatMap((m) => (String(m.type) === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name])));
};

const PROMQL_WORDS = new Set([
  'sum', 'rate', 'increase', 'by', 'without', 'and', 'or', 'unless', 'on', 'ignoring', 'histogram_quantile', 'label_values',
  'max', 'min', 'avg', 'count', 'irate', 'delta', 'abs', 'clamp_min', 'topk', 'bool', 'offset', 'time', 'vector', 'le', 'inf',
]);

/** Metric names a PromQL expression reads: identifiers outside label matchers, strings, ranges and `by (…)`. */
const metricNamesIn = (expr: string): string[] =>
  [...expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((m) => m[0])
    .filter((w) => !PROMQL_WORDS.has(w) && !/^\d/.test(w));

describe('metrics as Prometheus sees them', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(async () => redis.destroy());

  const check = (text: string) => spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });

  it('promtool check metrics passes on both connectors; each exports only its own families and its identity', async () => {
    const receiver = await Receiver.start();
    const outbound = await startInProcess('outbound', buildOutbound, redis, { webhooks: [{ url: receiver.url }] }, { Datastore__StartFromLatest: 'false', Webhooks__BatchWindowMilliseconds: '20' });
    const inbound = await startInProcess('inbound', buildInbound, redis, { mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 2, type: 36, valuePath: 'v' }] });
    try {
      expect((await postJson(`${inbound.url}/api/datapoints?topic=t`, { v: 1.5 })).status).toBe(200);
      expect((await postJson(`${inbound.url}/api/datapoints?topic=t`, { w: 1 })).status).toBe(422);
      expect((await request(`${outbound.url}/api/datapoints`)).status).toBe(200);
      await eventually(() => (receiver.points().length >= 1 ? true : undefined), 20000, 'a delivery');
      const texts = { outbound: (await request(`${outbound.url}/metrics`)).text, inbound: (await request(`${inbound.url}/metrics`)).text };
      for (const [kind, text] of Object.entries(texts)) {
        const r = check(text);
        expect([kind, r.status, r.stdout, r.stderr]).toEqual([kind, 0, '', '']);
        expect(text).toContain(`rest_connector_info{id="test-connector",kind="${kind}",version="${VERSION}"} 1`);
      }
      expect(texts.outbound).toMatch(/^webhook_deliveries_total\{webhook="0",host="127\.0\.0\.1:\d+",outcome="delivered"\} [1-9]/m);
      expect(texts.inbound).toMatch(/^inbound_requests_total\{outcome="written"\} 1$/m);
      for (const family of ['stream_group_lag', 'webhook_', 'outbound_get_', 'stream_entries_']) expect(texts.inbound).not.toContain(family);
      expect(texts.outbound).not.toContain('inbound_');
    } finally {
      await Promise.all([outbound.close(), inbound.close()]);
      await receiver.close();
    }
  });

  it('promtool check metrics can fail: it rejects a gauge named _total (what prom-client exports by default)', () => {
    const r = check('# HELP nodejs_active_handles_total x\n# TYPE nodejs_active_handles_total gauge\nnodejs_active_handles_total 1\n');
    expect(r.status).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/non-counter metrics should not have "_total" suffix/);
  });
});

describe('alert rules (deploy/prometheus)', () => {
  it('pass promtool check rules and promtool test rules', () => {
    const cwd = join(root, 'deploy', 'prometheus');
    expect(execFileSync('promtool', ['check', 'rules', 'alerts.yml'], { cwd, encoding: 'utf8' })).toMatch(/SUCCESS: 14 rules found/);
    expect(execFileSync('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd, encoding: 'utf8' })).toMatch(/SUCCESS/);
  });

  it('cover the data store, dead letters, open circuits, backlog drops, lag, lost entries, inbound 5xx, Redis memory (policy, evictions, OOM) and late deliveries, callers refused or rate-limited in bursts, with metrics the connectors export', async () => {
    const doc = parseAllDocuments(read('deploy/prometheus/alerts.yml'))[0]!.toJS() as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    const rules = doc.groups.flatMap((g) => g.rules);
    const exported = new Set([...(await exportedNames('outbound')), ...(await exportedNames('inbound'))]);
    const used = rules.flatMap((r) => metricNamesIn(r.expr));
    expect(used.filter((n) => !exported.has(n))).toEqual([]);
    expect(new Set(used)).toEqual(new Set([
      'datastore_connected', 'webhook_deadlettered_total', 'webhook_state', 'webhook_deadletter_dropped_total', 'stream_group_lag', 'stream_length',
      'stream_entries_lost_total', 'http_requests_total', 'datastore_eviction_policy_safe', 'datastore_evicted_keys_total', 'datastore_out_of_memory_errors_total',
      'webhook_delivery_lag_seconds_bucket', 'http_requests_refused_total',
    ]));
  });
});

describe('Grafana dashboard (deploy/grafana/rest-connectors.json)', () => {
  const dash = JSON.parse(read('deploy/grafana/rest-connectors.json')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  const exprs = dash.panels.flatMap((p) => p.targets.map((t) => t.expr));

  it('every query names only metrics the code exports', async () => {
    const exported = new Set([...(await exportedNames('outbound')), ...(await exportedNames('inbound'))]);
    const bad = exprs.flatMap((e) => metricNamesIn(e).filter((n) => !exported.has(n)).map((n) => `${n} in ${e}`));
    expect(bad).toEqual([]);
    expect(metricNamesIn('sum by (le) (rate(nope_total{a="b"}[5m]))')).toEqual(['nope_total']); // the check can fail
  });

  it('shows inbound rate and outcomes, GET latency, per-webhook deliveries, latency, queue, state, backlog, dead letters, lag, formats\' failures, callers\' refusals and points sent and held back by report', () => {
    const used = new Set(exprs.flatMap(metricNamesIn));
    for (const name of [
      'inbound_requests_total', 'inbound_mappings_total', 'http_request_duration_seconds_bucket', 'webhook_deliveries_total', 'webhook_request_duration_seconds_bucket',
      'webhook_queue_depth', 'webhook_deadlettered_total', 'webhook_state', 'webhook_backlog_batches', 'stream_group_lag', 'rest_connector_info',
      'webhook_delivery_lag_seconds_bucket', 'webhook_render_failures_total', 'webhook_points_skipped_total', 'http_requests_refused_total',
      'webhook_points_sent_total', 'webhook_points_suppressed_total',
    ]) {
      expect([name, used.has(name)]).toEqual([name, true]);
    }
  });
});

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  const dockerfile = read('Dockerfile');
  const defaultPort = Number(new URL(DEFAULT_HOST_URL).port);
  /** An environment variable name as the connector reads it: `__` for `:`, case-insensitive. */
  const envFor = (parameter: string) => parameter.replace(/:/g, '__').toLowerCase();

  // which manifest serves https is the test's own expectation, never read from the manifest under test
  it.each([['outbound', false], ['inbound', true]] as const)('%s (https listener: %p): the image command, port, probes, env, grace period, Service and PDB match the code', (kind, withTls) => {
    const docs = parseAllDocuments(read(`deploy/kubernetes/${kind}.yaml`)).map((d) => d.toJS()) as any[];
    const byKind = (k: string) => docs.find((d) => d.kind === k);
    const deployment = byKind('Deployment');
    const service = byKind('Service');
    const pdb = byKind('PodDisruptionBudget');
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "dist\/src\/cli\.js"\]$/m);
    expect(container.command).toBeUndefined(); // the image's entrypoint
    expect(container.args).toEqual([kind]);
    expect(container.ports[0]).toEqual({ name: 'http', containerPort: defaultPort });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
    const env = container.env as Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string } } }>;
    const tlsParams = [PARAMETERS.http.tlsCertFile, PARAMETERS.http.tlsKeyFile, PARAMETERS.http.clientCaFile];
    expect(env.map((e) => envFor(e.name)).sort()).toEqual([envFor(PARAMETERS.connectionString), envFor(PARAMETERS.id), ...(withTls ? tlsParams.map(envFor) : [])].sort());
    if (withTls) {
      // CONTRACT 7.1: the files the parameters name lie in a Secret mounted as a directory (so a renewal is swapped in)
      const mount = container.volumeMounts.find((m: { name: string }) => m.name === 'tls');
      const volume = pod.volumes.find((v: { name: string }) => v.name === 'tls');
      const secret = parseAllDocuments(read('deploy/kubernetes/tls-secret.example.yaml'))[0]!.toJS() as { metadata: { name: string }; type: string; stringData: Record<string, string> };
      expect([mount.readOnly, mount.subPath, volume.secret.secretName, secret.type]).toEqual([true, undefined, secret.metadata.name, 'kubernetes.io/tls']);
      for (const p of tlsParams) {
        const file = env.find((e) => envFor(e.name) === envFor(p))!.value!;
        expect(file.startsWith(`${mount.mountPath}/`) && Object.keys(secret.stringData).includes(file.slice(mount.mountPath.length + 1))).toBe(true);
      }
      expect(container.ports[1]).toEqual({ name: 'https', containerPort: 8443 });
      expect(service.spec.ports[1]).toEqual({ name: 'https', port: 8443, targetPort: 'https' });
    } else {
      const named = (xs: Array<{ name: string }> | undefined) => (xs ?? []).map((x) => x.name);
      expect([container.ports.length, service.spec.ports.length, named(container.volumeMounts).includes('tls'), named(pod.volumes).includes('tls')]).toEqual([1, 1, false, false]);
    }
    expect(env.find((e) => e.name === 'ConnectionStrings__Datastore')?.valueFrom?.secretKeyRef.name).toBe('rest-connectors-datastore');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(GRACE_MS / 1000);
    expect(deployment.spec.template.metadata.annotations['prometheus.io/port']).toBe(String(defaultPort));
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(service.spec.ports[0].targetPort).toBe('http');
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(deployment.spec.template.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
  });

  it('the Secret example names the key the Deployments read', () => {
    const secret = parseAllDocuments(read('deploy/kubernetes/datastore-secret.example.yaml'))[0]!.toJS() as { metadata: { name: string }; stringData: Record<string, string> };
    expect(secret.metadata.name).toBe('rest-connectors-datastore');
    expect(Object.keys(secret.stringData)).toEqual(['connectionString']);
  });
});

describe('systemd units (deploy/systemd): the restart loop for a connector run on a host', () => {
  it.each(['inbound', 'outbound'])('rest-connector-%s@.service: runs the command for that connector under its instance Id, restarts always, and passes systemd-analyze verify', (kind) => {
    const unit = read(`deploy/systemd/rest-connector-${kind}@.service`);
    const line = (key: string) => unit.split('\n').filter((l) => l.startsWith(`${key}=`)).map((l) => l.slice(key.length + 1));
    expect(line('ExecStart')).toEqual([`/usr/bin/rest-connector ${kind}`]);
    expect(line('Environment')).toEqual([`${PARAMETERS.id}=%i`]);
    expect(line('Restart')).toEqual(['always']);
    // a graceful stop within its own limit: systemd waits longer than the connector takes
    expect(Number(line('TimeoutStopSec')[0]) * 1000).toBeGreaterThan(GRACE_MS);
    // systemd's own check, on an instance of the unit (the command swapped for one that exists here, as root)
    const dir = require('node:fs').mkdtempSync(join(require('node:os').tmpdir(), 'unit-'));
    require('node:fs').writeFileSync(join(dir, `rest-connector-${kind}@.service`), unit.replace('/usr/bin/rest-connector', process.execPath).replace(/^User=.*$/m, 'User=root'));
    // systemd-analyze: Debian's systemd package (.ci/run installs it; on macOS this check fails, saying so)
    const verify = spawnSync('systemd-analyze', ['verify', join(dir, `rest-connector-${kind}@plant-a.service`)], { encoding: 'utf8' });
    expect([verify.error?.message, verify.status, verify.stderr.split('\n').filter((l) => l.includes(dir))]).toEqual([undefined, 0, []]);
  });
});
