import { eventually } from './helpers/cli';
import { backlogEntries } from './helpers/outage';
import { pendingCount, range, usePushHarness } from './helpers/push';

/**
 * CONTRACT 4.7 "An expression cannot hold the connector", against the running connector: an
 * expression whose regular expression backtracks for days, and one that builds a 150 MB string,
 * beside a plain webhook. Each is first shown to have reached its limit (its batch refused with the
 * limit's error), then: the connector lived on (the same process, its liveness answered throughout,
 * the plain webhook served meanwhile) and the expression's next batches were evaluated again.
 */
const { outbound, receiver, produce, r } = usePushHarness();

const BACKTRACKING = '$contains($pad("", 40, "a") & "!", /(a+)+$/)';

it('a backtracking regular expression and a huge string: their batches refused at the 1 s and memory limits, the connector and the other webhook never held', async () => {
  const plain = await receiver();
  const slow = await receiver();
  const huge = await receiver();
  // each expression is hostile for the first batch (seq 0) only: the next ones show it is evaluated again
  const { base, c } = await outbound('hostile', [
    { url: plain.url },
    { url: slow.url, format: { type: 'jsonata', expression: `datapoints[0].seq = 0 ? (${BACKTRACKING} ? {"m": 1} : {"m": 2}) : { "seqs": [datapoints.seq] }` } },
    { url: huge.url, format: { type: 'jsonata', expression: 'datapoints[0].seq = 0 ? $pad("", 150000000, "x") : { "seqs": [datapoints.seq] }' } },
  ], { Webhooks__BatchMaxSize: '1' });
  // liveness polled every 50 ms the whole time: when each answer came
  const answered: number[] = [];
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const res = await fetch(`${base}/health/live`);
      expect(res.status).toBe(200);
      answered.push(Date.now());
      await new Promise((res2) => setTimeout(res2, 50));
    }
  })();
  const t0 = Date.now();
  await produce(0, 1);
  await eventually(() => (plain.delivered().length === 1 ? true : undefined), 20000, 'the plain webhook\'s batch');
  // both limits reached: the batch refused for each, with the limit's error
  const refused = await eventually(async () => {
    const e = (await backlogEntries(r.client, 'hostile')).filter((x) => x.reason === 'refused');
    return e.length === 2 ? e : undefined;
  }, 30000, 'both hostile batches refused');
  // the huge string ends at the memory limit — or, on a machine so loaded that the garbage
  // collector takes over a second to give up, at the 1 s limit first: either way it was ended, and
  // the memory limit itself is shown with no time limit in its way by test/jsonataProcess.test.ts
  expect(refused.map((e) => e.webhook).sort()).toEqual(['1', '2']);
  expect(refused.find((e) => e.webhook === '1')!.error).toBe('format: evaluation ended at the 1 s limit');
  expect(['format: evaluation ended at the memory limit', 'format: evaluation ended at the 1 s limit']).toContain(refused.find((e) => e.webhook === '2')!.error);
  // with the default body (CONTRACT 4.7)
  expect(refused.every((e) => e.body === plain.delivered()[0]!.body)).toBe(true);
  await produce(1, 5);
  await eventually(async () => (slow.delivered().length === 5 && huge.delivered().length === 5 && (await pendingCount(r.client, 'hostile')) === 0 ? true : undefined), 30000, 'the next batches');
  polling = false;
  await poll;
  for (const h of [slow, huge]) expect(h.delivered().flatMap((q) => (JSON.parse(q.body) as { seqs: number[] }).seqs).sort((a, b) => a - b)).toEqual(range(1, 6));
  // the process lives on
  expect(c.proc.exitCode).toBeNull();
  // while the backtracking expression ran (until its limit ended it), the plain webhook got its
  // batch and liveness answered again and again: held by it, neither would have before its end
  const limitAt = Number(refused.find((e) => e.webhook === '1')!.id.split('-')[0]);
  expect(plain.delivered()[0]!.at).toBeLessThan(limitAt);
  expect(answered.filter((t) => t > t0 && t < limitAt).length).toBeGreaterThanOrEqual(3);
  const metrics = await (await fetch(`${base}/metrics`)).text();
  expect(metrics).toMatch(/webhook_render_failures_total\{webhook="1",[^}]*\} 1/);
  expect(metrics).toMatch(/webhook_render_failures_total\{webhook="2",[^}]*\} 1/);
}, 60000);
