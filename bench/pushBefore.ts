/**
 * push-formats-before (issue 46: "no format may cost more than before"): this build and another
 * (BENCH_BEFORE_CLI, the last landed `dist/src/cli.js`) side by side, reading the same stream at
 * the same time (two connector Ids, two consumer groups), each to five receivers of its own, every
 * format in turn. Run at once, both meet the same machine: the ratio of their CPU per point moves
 * far less from round to round than two runs one after the other do (push-formats' rounds spread
 * ±10 % here, these about ±3 %). BENCH_ROUNDS rounds (default 5), which starts first alternating;
 * 15,000 points/s (two connectors and the producer share the machine's two cores); BENCH_FORMATS
 * picks formats. Target: ours /
 * before ≤ 1.0 for every format, the median of the rounds, with the rounds' spread printed beside.
 */
import type { Redis } from 'ioredis';
import { FORMATS, median } from './pushFormats';
import { freePort, nextMessage, printTable, SECONDS, sleep, startConnector, startScript, stop, treeCpuMs, waitReady, type Row } from './lib';

export const pushFormatsBefore = async (r: { port: number; client: Redis }) => {
  const before = process.env.BENCH_BEFORE_CLI;
  if (before === undefined || before === '') {
    // a plain `npm run bench` has no other build at hand: said, not failed
    process.stdout.write('\npush-formats-before: skipped (set BENCH_BEFORE_CLI to the dist/src/cli.js of the build to compare with)\n');
    return { skipped: 'BENCH_BEFORE_CLI not set' };
  }
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const rate = Number(process.env.BENCH_PUSH_RATE ?? 15000);
  // BENCH_BEFORE_ENV (a JSON object): the environment of the 'before' connector only — with
  // BENCH_BEFORE_CLI naming this build's own cli.js, a setting's cost side by side
  const BEFORE_ENV = JSON.parse(process.env.BENCH_BEFORE_ENV ?? '{}') as Record<string, string>;
  const rows: Row[] = [];
  const summary: Row[] = [];
  const only = process.env.BENCH_FORMATS?.split(',').map((x) => x.trim());
  for (const f of only === undefined ? FORMATS : FORMATS.filter((x) => only.includes(x.name))) {
    const ratios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await r.client.flushall();
      const ports = await Promise.all(Array.from({ length: 10 }, () => freePort()));
      const receivers = startScript('receivers.js', ports.map(String));
      await nextMessage(receivers);
      const builds: Array<[string, string | undefined]> = round % 2 === 0 ? [['ours', undefined], ['before', before]] : [['before', before], ['ours', undefined]];
      const procs: Array<[string, ReturnType<typeof startConnector>]> = [];
      for (const [k, [name, cli]] of builds.entries()) {
        const port = await freePort();
        const webhooks = ports.slice(k * 5, k * 5 + 5).map((p) => ({ url: `http://127.0.0.1:${p}/hook`, ...(f.webhook ?? {}) }));
        await r.client.set(`connectors:${name}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], webhooks }));
        procs.push([name, startConnector('outbound', { Id: name, ConnectionStrings__Datastore: `127.0.0.1:${r.port}`, Webhooks__TimeoutMilliseconds: '2000', Webhooks__MaxAttempts: '2', ...(name === 'before' ? BEFORE_ENV : {}) }, cli)]);
        await waitReady(`http://127.0.0.1:${port}/health/ready`);
      }
      await sleep(1000);
      const cpu0 = new Map(procs.map(([n, p]) => [n, treeCpuMs(p.pid!)]));
      const producer = startScript('producer.js', [String(r.port), String(rate), String(SECONDS)]);
      const made = await nextMessage<{ produced: number }>(producer);
      // until both have delivered everything to all five (or 10 s more)
      let report: Array<{ distinct: number }> = [];
      for (let i = 0; i < 100; i++) {
        receivers.send('report');
        report = await nextMessage(receivers);
        if (report.every((x) => x.distinct >= made.produced)) break;
        await sleep(100);
      }
      const used = new Map(procs.map(([n, p]) => [n, ((treeCpuMs(p.pid!) - cpu0.get(n)!) * 1000) / Math.max(1, made.produced)]));
      for (const [, p] of procs) await stop(p);
      await stop(receivers);
      const complete = report.every((x) => x.distinct >= made.produced);
      ratios.push(used.get('ours')! / used.get('before')!);
      rows.push({ format: f.name, round: round + 1, 'ours µs/point': used.get('ours')!, 'before µs/point': used.get('before')!, 'ours / before': used.get('ours')! / used.get('before')!, 'all delivered': String(complete) });
      if (!complete) throw new Error(`${f.name} round ${round + 1}: not every point was delivered`);
    }
    summary.push({ format: f.name, 'ours / before, each round': ratios.map((x) => x.toFixed(3)).join(' / '), 'median': median(ratios), 'no more than before': String(median(ratios) <= 1.0) });
  }
  printTable(`push-formats-before (this build and BENCH_BEFORE_CLI side by side on one stream, ${rate.toLocaleString('en')} points/s, ${SECONDS} s a round)`, rows);
  printTable('push-formats-before: ours / before (target <= 1.0, median of the rounds)', summary);
  return { rows, summary };
};
