import * as E from 'fp-ts/Either';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { parseManagedSettings } from '../src/config/managed';
import { createApp } from '../src/http/app/app';
import { decodeHead, inboundRoutes } from '../src/http/inbound/route';
import type { InboundStore, KeyHeld, StoreFailure, StoreSession } from '../src/http/inbound/store';
import { makeMetrics } from '../src/telemetry/metrics';
import { byTopic, renderWrites } from '../src/mapping/commands';
import { makeLogger } from '../src/runtime/logger';
import { postJson } from './helpers/http';

/**
 * Issue 21: the inbound route's decisions without Redis. A scripted store answers each step with a
 * value or a tagged failure; the route must pick the status, body and headers, give an
 * idempotency key back or keep it, and count and log, from the tags alone.
 */
const settings = parseManagedSettings(JSON.stringify({ mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] }));
if (E.isLeft(settings)) throw new Error(settings.left.join());

interface Script {
  session?: StoreFailure;
  takeKey?: StoreFailure | KeyHeld;
  checkStream?: StoreFailure;
  exec?: StoreFailure;
  confirm?: StoreFailure;
}

const serve = async (script: Script, waitReplicas = false) => {
  const calls: string[] = [];
  const refused: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const log = makeLogger({}, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString()) as Record<string, unknown>), cb()) }));
  const metrics = makeMetrics({ kind: 'inbound', id: 'x', version: '0' });
  const left = (f: StoreFailure | undefined) => (f === undefined ? E.right(undefined) : E.left(f));
  const session: StoreSession = {
    takeKey: async (key) => {
      calls.push(`takeKey ${key}`);
      const t = script.takeKey;
      return t === undefined ? E.right('taken') : 'tag' in t ? E.left(t) : E.right(t);
    },
    releaseKey: async (key) => void calls.push(`release ${key}`),
    checkStream: async () => (calls.push('checkStream'), left(script.checkStream)),
    exec: async (writes) => (calls.push(`exec ${renderWrites(writes, false).map((c) => c[0]).join(',')}`), left(script.exec)),
    confirm: async () => (calls.push('confirm'), waitReplicas ? left(script.confirm) : E.right(undefined)),
  };
  const store: InboundStore = { session: async () => (script.session !== undefined ? E.left(script.session) : E.right(session)) };
  const app = createApp({
    log, metrics, apiKeys: [], isConnected: () => true, isActive: () => true, openapi: () => ({}),
    dataRoutes: inboundRoutes({
      connectorId: 'x', topics: byTopic(settings.right.mappings), maxBodyBytes: 1000, maxBatchItems: 1000, streamMaxLength: 100, store, log, metrics,
      outOfMemory: { refused: (write, err) => void refused.push(`${write}: ${err}`), written: () => void refused.push('written') },
    }),
  });
  const server: Server = createServer(app).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const r = await postJson(`${base}/api/datapoints?topic=t`, body, headers);
    return { status: r.status, body: r.json() as Record<string, unknown>, headers: r.headers };
  };
  const outcomes = async () => (await metrics.registry.getSingleMetricAsString('inbound_requests_total')).split('\n').filter((l) => !l.startsWith('#'));
  return { post, calls, refused, lines, outcomes, close: () => new Promise((r) => server.close(r)) };
};

const KEY = { 'Idempotency-Key': 'k1' };

describe('the inbound route, decided on the store\'s tags alone (no Redis)', () => {
  it('the checks before the body are pure: topic once, JSON, no compression', () => {
    expect(decodeHead('/api/datapoints?topic=t', { 'content-type': 'application/json; charset=utf-8' })).toEqual(E.right('t'));
    expect(decodeHead('/api/datapoints?topic=t&topic=u', { 'content-type': 'application/json' })).toEqual(E.left({ tag: 'missing_topic' }));
    expect(decodeHead('/api/datapoints?topic=t', { 'content-type': 'text/plain' })).toEqual(E.left({ tag: 'unsupported_media_type' }));
    expect(decodeHead('/api/datapoints?topic=t', { 'content-type': 'application/json', 'content-encoding': 'gzip' })).toEqual(E.left({ tag: 'unsupported_encoding' }));
  });

  it('written: the stream checked, one MULTI of MSET and XADD with the stored answer, confirmed, 200', async () => {
    const s = await serve({});
    try {
      expect(await s.post({ v: 1 }, KEY)).toMatchObject({ status: 200, body: { topic: 't', succeeded: ['m'] } });
      expect(s.calls).toEqual(['takeKey connectors:x:idempotency:k1', 'checkStream', 'exec mset,xadd,set', 'confirm']);
      expect(await s.outcomes()).toContain('inbound_requests_total{outcome="written"} 1');
      expect(s.refused).toEqual(['written']);
    } finally {
      await s.close();
    }
  });

  it('a mapping that fails: only the error entries and the stored 422, no stream check, no confirm', async () => {
    const s = await serve({});
    try {
      expect(await s.post({ v: 'hot' }, KEY)).toMatchObject({ status: 422, body: { message: '1 of 1 mappings failed' } });
      expect(s.calls).toEqual(['takeKey connectors:x:idempotency:k1', 'exec xadd,set']);
      expect(s.lines.find((l) => l.msg === 'mappings failed; nothing written')).toMatchObject({ topic: 't', failedCount: 1 });
    } finally {
      await s.close();
    }
  });

  it.each([
    ['not connected', { session: { tag: 'not_connected' } }, 503, { detail: 'data store is not connected' }, {}, []],
    ['out of memory', { exec: { tag: 'out_of_memory', error: 'OOM command not allowed' } }, 503, { detail: 'the data store is out of memory (it refuses writes); nothing was written' }, { 'retry-after': '5' }, ['release']],
    ['read-only', { exec: { tag: 'read_only', error: 'READONLY' } }, 503, { detail: 'the data store node is a replica (a failover is under way); nothing was written' }, {}, ['release']],
    ['aborted', { exec: { tag: 'aborted', error: 'EXECABORT' } }, 503, { detail: 'the data store did not take the write (EXECABORT); nothing was written' }, {}, ['release']],
    ['outcome unknown (the key is kept: it may be written)', { exec: { tag: 'unknown_outcome', error: 'Command timed out' } }, 503, { detail: expect.stringMatching(/outcome is unknown/) }, {}, []],
    ['not a stream', { checkStream: { tag: 'not_a_stream', type: 'string' } }, 503, { detail: 'process:updates is not a stream (it is a string); nothing was written' }, {}, ['release']],
  ] as const)('%s: the status, detail and headers; the key given back or kept', async (_name, script, status, body, headers, released) => {
    const s = await serve(script as Script);
    try {
      const r = await s.post({ v: 1 }, KEY);
      expect([r.status, r.body, r.headers]).toEqual([status, expect.objectContaining(body), expect.objectContaining(headers)]);
      expect(s.calls.filter((c) => c.startsWith('release')).map(() => 'release')).toEqual(released);
    } finally {
      await s.close();
    }
  });

  it('out of memory is told to readiness and counted; a failure is logged with its step, an unknown outcome as such', async () => {
    const s = await serve({ exec: { tag: 'out_of_memory', error: 'OOM command not allowed' } });
    try {
      await s.post({ v: 1 });
      expect(s.refused).toEqual(['request: OOM command not allowed']);
      expect(s.lines.find((l) => l.level === 'error')).toMatchObject({ topic: 't', outOfMemory: true, msg: 'writing the data points failed; nothing was written' });
      expect(await s.outcomes()).toContain('inbound_requests_total{outcome="failed"} 1');
    } finally {
      await s.close();
    }
    const u = await serve({ exec: { tag: 'unknown_outcome', error: 'Command timed out' } });
    try {
      await u.post({ v: 1 });
      expect(u.lines.find((l) => l.level === 'error')).toMatchObject({ outcomeUnknown: true, msg: 'the data store did not answer; the outcome of the write is unknown' });
    } finally {
      await u.close();
    }
  });

  it('not confirmed by enough replicas: 503 saying so, counted as unconfirmed; the key is kept (the write is on the master)', async () => {
    const s = await serve({ confirm: { tag: 'unconfirmed', error: 'WAIT: 0 of 1 replicas', replicas: 1, acked: 0 } }, true);
    try {
      const r = await s.post({ v: 1 }, KEY);
      expect([r.status, r.body.detail]).toEqual([503, expect.stringMatching(/applied on the master but not confirmed by 1 replica \(0 confirmed in time\)/)]);
      expect(s.calls).toEqual(['takeKey connectors:x:idempotency:k1', 'checkStream', 'exec mset,xadd,set', 'confirm']);
      expect(await s.outcomes()).toContain('inbound_requests_total{outcome="unconfirmed"} 1');
    } finally {
      await s.close();
    }
  });

  it('a key held by another request: reused 422, in progress 409, or its stored answer replayed (a 200 confirmed again) — writing nothing', async () => {
    const cases: Array<[KeyHeld, number, string[]]> = [
      [{ kind: 'reused' }, 422, []],
      [{ kind: 'in_progress' }, 409, []],
      [{ kind: 'replay', status: 200, body: '{"topic":"t","succeeded":["m"]}' }, 200, ['confirm']],
      [{ kind: 'replay', status: 422, body: '{"topic":"t","message":"1 of 1 mappings failed","failed":[],"succeeded":[]}' }, 422, []],
    ];
    for (const [held, status, after] of cases) {
      const s = await serve({ takeKey: held });
      try {
        const r = await s.post({ v: 1 }, KEY);
        expect([held.kind, r.status, r.headers['idempotent-replayed']]).toEqual([held.kind, status, held.kind === 'replay' ? 'true' : undefined]);
        expect(s.calls).toEqual(['takeKey connectors:x:idempotency:k1', ...after]);
      } finally {
        await s.close();
      }
    }
  });
});
