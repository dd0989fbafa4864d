import { readdirSync, readFileSync } from 'node:fs';
import { jsonataProcess, LIMIT_ERROR, MEMORY_ERROR, type Evaluated, type JsonataEvaluator } from '../src/streams/webhook/jsonataProcess';

/**
 * CONTRACT 4.7 "An expression cannot hold the connector": each expression evaluates in a process of
 * its own (the build's `jsonataProcessMain.js`), ended at 1 s from an evaluation's start whatever
 * it does, or dying at its heap's limit — never taking this process with it, never holding its
 * event loop. Each hostile case first shows that the limit was reached (the error names it), then
 * that the next batch of the same expression is evaluated again, by a new process.
 */
const MB = 1024 * 1024;
const input = JSON.stringify({ datapoints: [{ casdu: 1, ioa: 2, value: 3 }, { casdu: 1, ioa: 3, value: 4 }] });
const open: JsonataEvaluator[] = [];
const evaluator = (expression: string, output: 'json' | 'ndjson' = 'json', maxBodyBytes = 16 * MB, options: { limitMs?: number } = {}) => {
  const e = jsonataProcess({ expression, output, maxBodyBytes }, options);
  open.push(e);
  return e;
};
afterAll(() => open.forEach((e) => e.close()));
const text = (e: Evaluated) => (e.result.kind === 'body' ? Buffer.from(e.result.bytes).toString('utf8') : e.result.kind === 'failed' ? `failed: ${e.result.error}` : 'nothing');
/** A regular expression that backtracks for days (each extra `a` doubles its time): no JavaScript can stop it on its own thread. */
const BACKTRACKING = '$contains($pad("", 40, "a") & "!", /(a+)+$/) ? {"m": true} : {"m": false}';

it('renders json, ndjson and nothing; errors with JSONata\'s code and place; batches asked for together end in the order asked', async () => {
  const e = evaluator('{"n": $count(datapoints)}');
  const nd = evaluator('datapoints.{"v": value}', 'ndjson');
  const none = evaluator('datapoints[value > 10]');
  const bad = evaluator('$error("boom")');
  const order: number[] = [];
  const all = await Promise.all([1, 2, 3, 4, 5].map((k) => e.evaluate(JSON.stringify({ datapoints: Array.from({ length: k * 200 }, () => ({})) })).then((r) => (order.push(k), r))));
  expect(all.map(text)).toEqual(['{"n":200}', '{"n":400}', '{"n":600}', '{"n":800}', '{"n":1000}']);
  expect(order).toEqual([1, 2, 3, 4, 5]);
  expect(text(await nd.evaluate(input))).toBe('{"v":3}\n{"v":4}\n');
  expect(text(await none.evaluate(input))).toBe('nothing');
  expect(text(await bad.evaluate(input))).toBe('failed: boom (D3137 at character 7)');
  expect(text(await evaluator('{"a": 1}', 'ndjson').evaluate(input))).toBe('failed: output "ndjson" needs an array, the expression gave object');
}, 30000);

it('a regular expression that backtracks is ended at 1 s; this thread ran meanwhile; the next batch of the expression is evaluated by a new process', async () => {
  const e = evaluator(`$count(datapoints) = 0 ? {"ok": true} : (${BACKTRACKING})`);
  let ticks = 0;
  const tick = setInterval(() => ticks++, 10);
  const t0 = Date.now();
  const r = await e.evaluate(input);
  const took = Date.now() - t0;
  clearInterval(tick);
  expect(text(r)).toBe(`failed: ${LIMIT_ERROR}`);
  expect(took).toBeGreaterThanOrEqual(1000);
  // held, this thread would have ticked not once until the end
  expect(ticks).toBeGreaterThanOrEqual(10);
  expect(text(await e.evaluate('{"datapoints":[]}'))).toBe('{"ok":true}');
}, 30000);

it('an expression that fills its heap ends at the memory limit, not this process; one whose body is too long is refused with its size', async () => {
  // a time limit far beyond the memory's: the heap fills first however loaded the machine is (with
  // the 1 s limit, a busy machine's garbage collector can take longer than that to give up)
  const huge = evaluator('$count(datapoints) = 0 ? "small" : $pad("", 150000000, "x")', 'json', 16 * MB, { limitMs: 60000 });
  expect(text(await huge.evaluate(input))).toBe(`failed: ${MEMORY_ERROR}`);
  expect(text(await huge.evaluate('{"datapoints":[]}'))).toBe('"small"');
  const long = evaluator('$pad("", 2000, "é")', 'json', 1000);
  expect(text(await long.evaluate(input))).toBe('failed: body of 4002 bytes exceeds Webhooks:MaxBodyBytes');
  expect(text(await evaluator('$pad("", 998, "x")', 'json', 1000).evaluate(input))).toBe(`"${'x'.repeat(998)}"`);
}, 30000);

it('another expression is not held behind one that runs to its limit', async () => {
  const slow = evaluator(BACKTRACKING);
  const quick = evaluator('{"n": $count(datapoints)}');
  const ended: string[] = [];
  const a = slow.evaluate(input).then((r) => ended.push(`slow ${text(r)}`));
  const b = quick.evaluate(input).then((r) => ended.push(`quick ${text(r)}`));
  await Promise.all([a, b]);
  expect(ended).toEqual(['quick {"n":2}', `slow failed: ${LIMIT_ERROR}`]);
}, 30000);

it('a process that cannot start fails the batch waiting for it, and the next one too; closed, it fails what waits', async () => {
  const e = jsonataProcess({ expression: 'x', output: 'json', maxBodyBytes: MB }, { file: '/nonexistent/jsonataProcessMain.js', startMs: 5000 });
  open.push(e);
  expect(text(await e.evaluate(input))).toMatch(/^failed: the evaluation process (ended|failed|did not start)/);
  expect(text(await e.evaluate(input))).toMatch(/^failed: the evaluation process (ended|failed|did not start)/);
  const c = evaluator(BACKTRACKING);
  const waiting = [c.evaluate(input), c.evaluate(input)];
  setTimeout(() => c.close(), 200);
  expect((await Promise.all(waiting)).map(text)).toEqual(['failed: the evaluation process is closed', 'failed: the evaluation process is closed']);
  expect(text(await c.evaluate(input))).toBe('failed: the evaluation process is closed');
}, 30000);

it('an evaluation process offers itself first to the kernel\'s out-of-memory killer (oom_score_adj 1000), never the connector', async () => {
  const e = evaluator('{"n": $count(datapoints)}');
  expect(text(await e.evaluate(input))).toBe('{"n":2}');
  const children = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      return Number(stat[1]) === process.pid && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('jsonataProcessMain');
    } catch {
      return false;
    }
  });
  expect(children.length).toBeGreaterThan(0);
  for (const pid of children) expect(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim()).toBe('1000');
  expect(readFileSync('/proc/self/oom_score_adj', 'utf8').trim()).not.toBe('1000');
});
