/**
 * The baselines of the HTTP scenarios: bare express 5 + ioredis handlers with no validation,
 * logging or metrics. `inbound`: express.json(), the same 10 lookups and the same one MULTI of
 * 20 commands as the connector; `inbound-array`: the same for each object of an array body, all
 * in one MULTI; `get-one`: one GET of one key.
 */
import express from 'express';
import { Redis } from 'ioredis';
import { BENCH_MAPPINGS } from './fixtures';

const [mode, redisPort, port] = process.argv.slice(2) as [string, string, string];
const redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', protocol: 2 });
const app = express();

const get = (o: unknown, path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>((acc, k) => (acc as Record<string | number, unknown> | undefined)?.[k], o);

/** The 10 lookups of one object and their SET and XADD, queued on `multi`. */
const queueItem = (multi: ReturnType<Redis['multi']>, body: unknown, received: string) => {
  for (const m of BENCH_MAPPINGS) {
    const value = get(body, m.steps);
    const ts = m.tsSteps ? new Date(get(body, m.tsSteps) as string).toISOString() : received;
    const json = JSON.stringify({ casdu: m.casdu, ioa: m.ioa, type: m.type, value: m.type === 1 || m.type === 30 ? Boolean(value) : Number(value), timestamp: ts, source: 'baseline' });
    multi.set(`process:image:casdu:${m.casdu}:ioa:${m.ioa}`, json);
    multi.xadd('process:updates', 'MAXLEN', '~', '100000', '*', 'casdu', String(m.casdu), 'ioa', String(m.ioa), 'source', 'baseline', 'data', json);
  }
};

if (mode === 'inbound') {
  app.post('/api/datapoints', express.json(), async (req, res) => {
    const multi = redis.multi();
    queueItem(multi, req.body as unknown, new Date().toISOString());
    await multi.exec();
    res.json({ topic: req.query.topic, succeeded: BENCH_MAPPINGS.map((m) => m.name) });
  });
} else if (mode === 'inbound-array') {
  // inbound-arrays: an array of objects, the same per item, all in one MULTI
  app.post('/api/datapoints', express.json({ limit: '4mb' }), async (req, res) => {
    const items = req.body as unknown[];
    const received = new Date().toISOString();
    const multi = redis.multi();
    for (const item of items) queueItem(multi, item, received);
    await multi.exec();
    res.json({ topic: req.query.topic, items: items.length, succeeded: BENCH_MAPPINGS.map((m) => m.name) });
  });
} else {
  app.get('/api/datapoints', async (req, res) => {
    const value = await redis.get(`process:image:casdu:${String(req.query.casdu)}:ioa:${String(req.query.ioa)}`);
    res.json({ datapoints: value === null ? [] : [JSON.parse(value)] });
  });
}
app.listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
