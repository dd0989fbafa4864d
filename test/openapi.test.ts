import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildInbound } from '../src/runtime/inbound';
import { buildOutbound } from '../src/runtime/outbound';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { request } from './helpers/http';
import { TestRedis } from './helpers/redis';

/**
 * The OpenAPI documents work with the tools users bring: they validate against the OpenAPI 3.1
 * schema (@seriousme/openapi-schema-validator), and a client generated with openapi-typescript
 * (types) and openapi-fetch (calls) type-checks a real call of every operation — and refuses a
 * wrong one, so the check can fail.
 */
const root = join(__dirname, '..');
const bin = (name: string) => join(root, 'node_modules', '.bin', name);
const dir = mkdtempSync(join(root, 'node_modules', '.cache-openapi-test-'));
let redis: TestRedis;
const docs: Record<'outbound' | 'inbound', Record<string, any>> = { outbound: {}, inbound: {} };

beforeAll(async () => {
  redis = await TestRedis.start();
  const env = { Authentication__ApiKeys: 'k1' };
  for (const [kind, build] of [['outbound', buildOutbound], ['inbound', buildInbound]] as const) {
    const app: InProcess = await startInProcess(kind, build, redis, { isActive: kind === 'inbound' }, env);
    try {
      docs[kind] = (await request(`${app.url}/openapi.json`, { headers: { 'X-Api-Key': 'k1' } })).json();
    } finally {
      await app.close();
    }
  }
}, 30000);
afterAll(async () => {
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const VALIDATE = `
const { Validator } = require('@seriousme/openapi-schema-validator');
let text = ''; process.stdin.on('data', (d) => (text += d)).on('end', async () => {
  const v = new Validator(); const r = await v.validate(JSON.parse(text));
  process.stdout.write(JSON.stringify({ valid: r.valid, version: v.version, errors: r.errors }));
});`;

const validate = (doc: object): { valid: boolean; version: string; errors: unknown } =>
  JSON.parse(execFileSync(process.execPath, ['-e', VALIDATE], { cwd: root, input: JSON.stringify(doc), encoding: 'utf8' }));

describe.each(['outbound', 'inbound'] as const)('%s document', (kind) => {
  it('validates against the OpenAPI 3.1 schema', () => {
    const r = validate(docs[kind]);
    expect([r.version, r.errors]).toEqual(['3.1', undefined]);
    expect(r.valid).toBe(true);
  });

  it('has an operationId per operation, servers from the listen address, and open health endpoints', () => {
    const doc = docs[kind];
    const ops = Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>).flatMap((p) => Object.values(p));
    expect(ops.every((o) => typeof o.operationId === 'string')).toBe(true);
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
    expect(doc.servers).toEqual([{ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) }]);
    expect(doc.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    expect(doc.paths['/health/live'].get.security).toEqual([]);
    expect(doc.paths['/health/ready'].get.security).toEqual([]);
    expect(doc.paths['/metrics'].get.security).toBeUndefined();
  });
});

it('CONTRACT 7.2: every endpoint that needs authentication documents 403 and 429 (with Retry-After); the health endpoints neither', () => {
  for (const kind of ['outbound', 'inbound'] as const) {
    for (const [path, item] of Object.entries(docs[kind].paths as Record<string, Record<string, { responses: Record<string, any> }>>)) {
      for (const op of Object.values(item)) {
        const guarded = !path.startsWith('/health/');
        expect([path, '403' in op.responses, '429' in op.responses]).toEqual([path, guarded, guarded]);
        if (guarded) expect(op.responses['429'].headers['Retry-After'].schema).toEqual({ type: 'integer', minimum: 1 });
      }
    }
  }
  expect(docs.inbound.paths['/api/datapoints'].post.responses['403'].description).toContain('may not write this topic');
  expect(docs.outbound.paths['/api/webhooks'].get.responses['403'].description).toContain('operate');
});

it('the inbound body is open (an object, or 1 to Http:MaxBatchItems of them), the outbound query parameters are integers with ranges, and the webhook POST is described', () => {
  expect(docs.inbound.paths['/api/datapoints'].post.requestBody.content['application/json'].schema).toEqual({
    oneOf: [{ type: 'object', additionalProperties: true }, { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'object', additionalProperties: true } }],
  });
  expect(Object.keys(docs.inbound.components.schemas.InboundSuccess.properties)).toEqual(['topic', 'items', 'succeeded']);
  expect(docs.inbound.components.schemas.InboundFailure.properties.failed.items.properties.item).toEqual(expect.objectContaining({ type: 'integer', minimum: 0 }));
  const params = docs.outbound.paths['/api/datapoints'].get.parameters as Array<{ name: string; schema: object }>;
  expect(params.map((p) => [p.name, p.schema])).toEqual([
    ['casdu', { type: 'integer', minimum: 0, maximum: 65535 }],
    ['ioa', { type: 'integer', minimum: 0, maximum: 16777215 }],
  ]);
  const hook = docs.outbound.webhooks.dataPointBatch.post;
  expect(hook.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['webhook-id', 'webhook-timestamp', 'webhook-signature']));
  expect(hook.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/DataPointList' });
  expect(docs.inbound.webhooks).toBeUndefined();
});

describe('a client generated with openapi-typescript', () => {
  const generate = (kind: 'outbound' | 'inbound'): void => {
    writeFileSync(join(dir, `${kind}.json`), JSON.stringify(docs[kind]));
    execFileSync(bin('openapi-typescript'), [join(dir, `${kind}.json`), '-o', join(dir, `${kind}.d.ts`)], { stdio: 'pipe' });
  };
  const typecheck = (code: string): { ok: boolean; output: string } => {
    writeFileSync(join(dir, 'client.ts'), code);
    const r = spawnSync(bin('tsc'), ['--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--types', 'node', join(dir, 'client.ts')], { cwd: root, encoding: 'utf8' });
    return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
  };
  const CLIENT = (calls: string) => `
import createClient from 'openapi-fetch';
import type { paths as Outbound, webhooks as OutboundWebhooks } from './outbound';
import type { paths as Inbound } from './inbound';
const outbound = createClient<Outbound>({ baseUrl: 'http://localhost:8080', headers: { 'X-Api-Key': 'k' } });
const inbound = createClient<Inbound>({ baseUrl: 'http://localhost:8081', headers: { Authorization: 'Bearer k' } });
export async function calls(): Promise<void> {
${calls}
}
`;

  beforeAll(() => {
    generate('outbound');
    generate('inbound');
  }, 60000);

  it('type-checks a real call of every operation', () => {
    const r = typecheck(CLIENT(`
  const all = await outbound.GET('/api/datapoints');
  const some = await outbound.GET('/api/datapoints', { params: { query: { casdu: 1, ioa: 1001 } } });
  const first: number | undefined = some.data?.datapoints[0]?.ioa;
  if (some.error && 'code' in some.error) { const code: string = some.error.code; void code; }
  const posted = await inbound.POST('/api/datapoints', { params: { query: { topic: 'plant-a' } }, body: { sensors: { boiler: { temp: 21.5 } }, ts: '2026-11-21T10:15:00Z' } });
  const names: string[] | undefined = posted.data?.succeeded;
  const many = await inbound.POST('/api/datapoints', { params: { query: { topic: 'plant-a' } }, body: [{ ts: '2026-11-21T10:15:00Z' }, { ts: '2026-11-21T10:16:00Z' }] });
  const items: number | undefined = many.data?.items;
  void items;
  const live = [await outbound.GET('/health/live'), await inbound.GET('/health/live')];
  const ready = [await outbound.GET('/health/ready'), await inbound.GET('/health/ready')];
  const metrics = [await outbound.GET('/metrics', { parseAs: 'text' }), await inbound.GET('/metrics', { parseAs: 'text' })];
  const docs = [await outbound.GET('/openapi.json'), await inbound.GET('/openapi.json')];
  const asked = await outbound.POST('/api/webhooks/{index}/interrogation', { params: { path: { index: 0 } } });
  const queued: 'queued' | undefined = asked.data?.state;
  void queued;
  const status: Array<string | undefined> = [...live, ...ready].map((r) => r.data?.status);
  void metrics; void docs; void status;
  const batch: OutboundWebhooks['dataPointBatch']['post']['requestBody'] = { content: { 'application/json': { datapoints: [{ casdu: 1, ioa: 2, type: 36, value: 1.5, timestamp: 't', source: 's', quality: 'good' }] } } };
  void all; void first; void names; void batch;`));
    expect(r.output).toBe('');
    expect(r.ok).toBe(true);
  });

  it('refuses a wrong call (a casdu that is not a number), so the check above can fail', () => {
    const r = typecheck(CLIENT(`  await outbound.GET('/api/datapoints', { params: { query: { casdu: 'x' } } });`));
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(/client\.ts\(8,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
  });
});

it('servers: an address on every interface becomes a {host} variable', () => {
  const { serversOf } = require('../src/http/openapi/document') as typeof import('../src/http/openapi/document');
  expect(serversOf(['http://0.0.0.0:8080', 'http://[::]:8081', 'http://10.1.2.3:80'])).toEqual([
    { url: 'http://{host}:8080', variables: { host: { default: 'localhost', description: expect.any(String) } } },
    { url: 'http://{host}:8081', variables: { host: { default: 'localhost', description: expect.any(String) } } },
    { url: 'http://10.1.2.3:80' },
  ]);
});
