/**
 * push-formats (CONTRACT 4.7 "Cost", issue 46): the connector beside a bare pipeline doing the same
 * job at the same rate, for each format — `datapoints`, `ndjson`, `influx-line`, `influx-line` with
 * gzip, `jsonata` (the records reshaping) — five receivers, the connector's default batch settings,
 * 20,000 points/s (BENCH_PUSH_RATE), rounds interleaved (BENCH_ROUNDS, default 3; which goes first
 * turns with the round; BENCH_FORMATS picks some formats). The figure: whole-process CPU per delivered point — the connector's
 * process and its JSONata evaluation process; the bare pipeline's one process (`bench/pushBare.ts`,
 * fixed before any run: read in a group, batch, render once with the same libraries, POST the same
 * bytes as a Buffer, acknowledge). Each round's ratio is ours / bare of that round; the median of
 * the rounds counts.
 *
 * Targets (issue 46): every point delivered; and, with BENCH_BEFORE_CLI naming another build's
 * `dist/src/cli.js` (the last landed one), no format costs more than it did there: that build runs as
 * a third contender in every round, against the same bare pipeline, and ours / before (median of the
 * rounds' ratios) must be at most 1.0 — within the spread the same build shows from round to round
 * (printed: a build measured against itself moves a few per cent here). The next issue's targets
 * against the bare pipeline (≤ 1.0, jsonata ≤ 1.1) are printed beside. And the price of evaluating
 * JSONata off the connector's threads, measured apart: the CPU of both processes per point for the
 * same batches evaluated through the evaluation process, against the `jsonata` library called in
 * this process.
 */
import { performance } from 'node:perf_hooks';
import { evaluateBody, compileJsonata } from '../src/streams/webhook/jsonataEval';
import { jsonataProcess } from '../src/streams/webhook/jsonataProcess';
import { printTable, SECONDS, treeCpuMs, type Row } from './lib';

export interface FormatFigures {
  readonly cpuUsPerPoint: number;
  readonly p99: number;
  readonly p99s: readonly number[];
  readonly delivered: readonly number[];
  readonly duplicates: readonly number[];
}
type Shape = { readonly webhooks: number; readonly filtered: boolean; readonly formats?: ReadonlyArray<Record<string, unknown> | undefined>; readonly bare?: { format: string; expression?: string } };

/** The typical reshaping: a records envelope (what the receivers read back: seq, t, w). */
export const JSONATA_RECORDS = '{ "records": [datapoints.{ "tag": casdu & "." & ioa, "v": value, "ts": timestamp, "seq": seq, "t": t, "w": w }] }';
const INFLUX = { format: { type: 'influx-line', measurement: 'bench' } };
export const FORMATS: ReadonlyArray<{ readonly name: string; readonly webhook: Record<string, unknown> | undefined; readonly bare: { format: string; expression?: string } }> = [
  { name: 'datapoints', webhook: undefined, bare: { format: 'datapoints' } },
  { name: 'ndjson', webhook: { format: { type: 'ndjson' } }, bare: { format: 'ndjson' } },
  { name: 'influx-line', webhook: INFLUX, bare: { format: 'influx-line' } },
  { name: 'influx-line + gzip', webhook: { ...INFLUX, compression: 'gzip' }, bare: { format: 'influx-line+gzip' } },
  { name: 'jsonata', webhook: { format: { type: 'jsonata', expression: JSONATA_RECORDS } }, bare: { format: 'jsonata', expression: JSONATA_RECORDS } },
];

/** The next issue's targets ("Push at the floor"), against the bare pipeline, printed beside. */
const FLOOR: Readonly<Record<string, number>> = { datapoints: 1.0, ndjson: 1.0, 'influx-line': 1.0, 'influx-line + gzip': 1.0, jsonata: 1.1 };

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** A 1,000-point batch's default body as the producer's points make it. */
const sampleInput = (k: number): string => {
  const t = Date.now();
  const points: string[] = [];
  for (let i = 0; i < 1000; i++) points.push(`{"casdu":1,"type":36,"timestamp":"${new Date(t).toISOString()}","source":"bench","t":${t},"ioa":${i},"value":${k * 1000 + i},"seq":${k * 1000 + i}}`);
  return `{"datapoints":[${points.join(',')}]}`;
};

/**
 * The price of the evaluation process: CPU of this process and those under it per point, for the
 * same batches (20 a second, as at 20,000 points/s) evaluated through a `jsonataProcess` and by the
 * library in this process. The median of `rounds` measurements of 100 batches each.
 */
const isolationPrice = async (rounds: number): Promise<{ inProcess: number; isolated: number }> => {
  const compiled = compileJsonata(JSONATA_RECORDS);
  const evaluator = jsonataProcess({ expression: JSONATA_RECORDS, output: 'json', maxBodyBytes: 16 * 1024 * 1024 });
  const inputs = Array.from({ length: 100 }, (_, k) => sampleInput(k));
  const measure = async (evaluate: (input: string) => Promise<unknown>): Promise<number> => {
    const cpu0 = treeCpuMs(process.pid);
    const u0 = process.cpuUsage();
    for (const input of inputs) {
      const t0 = performance.now();
      await evaluate(input);
      // paced as the connector gets batches: one each 50 ms
      await new Promise((r) => setTimeout(r, Math.max(0, 50 - (performance.now() - t0))));
    }
    const u = process.cpuUsage(u0);
    // this process's own time from cpuUsage (µs), the rest of the tree from /proc (10 ms ticks)
    const children = Math.max(0, treeCpuMs(process.pid) - cpu0 - (u.user + u.system) / 1000);
    return ((u.user + u.system) / 1000 + children) * 1000 / (inputs.length * 1000);
  };
  const inProcess: number[] = [];
  const isolated: number[] = [];
  await evaluator.evaluate(inputs[0]!);
  for (let k = 0; k < rounds; k++) {
    inProcess.push(await measure((input) => evaluateBody(compiled, input, 16 * 1024 * 1024)));
    isolated.push(await measure((input) => evaluator.evaluate(input)));
  }
  evaluator.close();
  return { inProcess: median(inProcess), isolated: median(isolated) };
};

type Who = 'ours' | 'bare' | 'before' | 'floor';

export const pushFormats = async <F extends FormatFigures>(run: (who: Who, rate: number, shape: Shape) => Promise<F>, row: (who: string, f: F) => Row) => {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const rate = Number(process.env.BENCH_PUSH_RATE ?? 20000);
  const before = process.env.BENCH_BEFORE_CLI !== undefined && process.env.BENCH_BEFORE_CLI !== '';
  // BENCH_FLOOR=1: a fourth contender, the bare pipeline plus the contract's mandated checks and
  // writes (`bench/pushBare.ts`, BARE_CONTRACT) — informational: it says how much of ours / bare is
  // mandated work; the targets stay against the bare pipeline
  const floor = process.env.BENCH_FLOOR === '1';
  const floorRatios = new Map<string, number[]>();
  const floorCpu = new Map<string, number[]>();
  const rows: Row[] = [];
  const ratios = new Map<string, number[]>();
  const beforeRatios = new Map<string, number[]>();
  const p99Ratios = new Map<string, number[]>();
  const cpu = new Map<string, { ours: number[]; bare: number[]; before: number[] }>();
  const incomplete: string[] = [];
  // BENCH_FORMATS (comma-separated names): only those, for a longer look at a few
  const only = process.env.BENCH_FORMATS?.split(',').map((x) => x.trim());
  const formats = only === undefined ? FORMATS : FORMATS.filter((f) => only.includes(f.name));
  for (let round = 0; round < rounds; round++) {
    for (const f of formats) {
      const all: Who[] = [...(['ours', 'bare'] as const), ...(before ? (['before'] as const) : []), ...(floor ? (['floor'] as const) : [])];
      // which goes first turns with the round
      const order = all.map((_, k) => all[(k + round) % all.length]!);
      const got: Partial<Record<Who, F>> = {};
      for (const who of order) {
        got[who] = await run(who, rate, { webhooks: 5, filtered: false, formats: Array(5).fill(f.webhook), bare: f.bare });
        rows.push({ round: round + 1, format: f.name, ...row(who, got[who]!) });
        if (got[who]!.delivered.some((d) => d < 1)) incomplete.push(`${who} ${f.name} round ${round + 1}: ${got[who]!.delivered.map((d) => (d * 100).toFixed(1)).join(' / ')} %`);
      }
      ratios.set(f.name, [...(ratios.get(f.name) ?? []), got.ours!.cpuUsPerPoint / got.bare!.cpuUsPerPoint]);
      p99Ratios.set(f.name, [...(p99Ratios.get(f.name) ?? []), got.ours!.p99 / Math.max(1, got.bare!.p99)]);
      if (got.floor !== undefined) {
        floorRatios.set(f.name, [...(floorRatios.get(f.name) ?? []), got.ours!.cpuUsPerPoint / got.floor.cpuUsPerPoint]);
        floorCpu.set(f.name, [...(floorCpu.get(f.name) ?? []), got.floor.cpuUsPerPoint]);
      }
      if (got.before !== undefined) beforeRatios.set(f.name, [...(beforeRatios.get(f.name) ?? []), got.ours!.cpuUsPerPoint / got.before.cpuUsPerPoint]);
      const c = cpu.get(f.name) ?? { ours: [], bare: [], before: [] };
      cpu.set(f.name, { ours: [...c.ours, got.ours!.cpuUsPerPoint], bare: [...c.bare, got.bare!.cpuUsPerPoint], before: [...c.before, ...(got.before ? [got.before.cpuUsPerPoint] : [])] });
    }
  }
  printTable(`push-formats (5 webhooks, ${rate.toLocaleString('en')} points/s, ${SECONDS} s a run, ${rounds} rounds interleaved; CPU µs per point of the whole process tree)`, rows);
  const price = await isolationPrice(3);
  const summary = formats.map((f) => {
    const rs = ratios.get(f.name)!;
    const bs = beforeRatios.get(f.name) ?? [];
    const c = cpu.get(f.name)!;
    return {
      format: f.name, 'ours µs/point (median)': median(c.ours), 'bare µs/point (median)': median(c.bare),
      'ours / bare, each round': rs.map((x) => x.toFixed(2)).join(' / '), 'ours / bare (median of rounds)': median(rs), 'next issue target': FLOOR[f.name]!,
      'p99 ours / bare (median)': median(p99Ratios.get(f.name)!),
      ...(floor ? {
        'floor µs/point (median)': median(floorCpu.get(f.name)!), 'floor / bare (median)': median(floorCpu.get(f.name)!.map((x, k) => x / c.bare[k]!)),
        'ours / floor, each round': floorRatios.get(f.name)!.map((x) => x.toFixed(2)).join(' / '), 'ours / floor (median of rounds)': median(floorRatios.get(f.name)!),
      } : {}),
      ...(before ? {
        'before µs/point (median)': median(c.before), 'before / bare (median)': median(c.before.map((b, k) => b / c.bare[k]!)),
        'ours / before, each round': bs.map((x) => x.toFixed(2)).join(' / '), 'ours / before (median of rounds)': median(bs), 'no more than before': String(median(bs) <= 1.0),
      } : {}),
    };
  });
  const met = incomplete.length === 0 && (!before || summary.every((s) => s['no more than before'] === 'true'));
  printTable(`push-formats: ours / bare pipeline${before ? ', and ours / the build before (target: <= 1.0, median of the rounds)' : ' (BENCH_BEFORE_CLI unset: no build before to hold ours to)'}`, summary);
  printTable('push-formats: the price of evaluating JSONata in a process of its own (CPU µs per point, both processes, 1,000-point batches 20 a second; median of 3 × 100 batches)', [{
    'jsonata library in this process': price.inProcess, 'through the evaluation process': price.isolated, 'price µs/point': price.isolated - price.inProcess, 'ratio': price.isolated / price.inProcess,
  }]);
  if (incomplete.length > 0) process.stdout.write(`not every point delivered:\n${incomplete.join('\n')}\n`);
  process.stdout.write(`push-formats targets met: ${String(met)}\n`);
  return { rows, summary, price, incomplete, met };
};
