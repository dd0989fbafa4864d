/**
 * push-report (CONTRACT 4.8 "Cost", issue 48): five webhooks with `report` against five plain ones,
 * at the same rate, in one `npm run bench` run: 20,000 entries/s (BENCH_PUSH_RATE) of 2,000 points —
 * slow noisy floats with a rare flip of `quality` (bench/producer.ts, PRODUCER_POINTS) — rounds
 * interleaved (BENCH_ROUNDS, default 3; which goes first turns with the round). Figures:
 *
 * - whole-process CPU per stream entry, report / plain (each round's ratio; the median counts;
 *   target ≤ 1.2);
 * - the share of entries the report webhooks were sent (what their rules let through);
 * - Redis commands per batch by name (INFO commandstats counts the commands a script runs too): the
 *   report run's record is one `EVAL` a batch (target: one round trip a batch for the decision,
 *   the state and the record together), where the plain run's is one `HSET`;
 * - the state's Redis memory per point and webhook (`MEMORY USAGE` of each `reported:{N}` hash,
 *   divided by its points).
 *
 * Every entry must be acknowledged and every report webhook must have got the same points (their
 * rules are the same); a plain receiver must have got every entry.
 */
import { printTable, type Row } from './lib';
import { median } from './pushFormats';

export interface ReportRunFigures {
  readonly cpuUsPerPoint: number;
  readonly produced: number;
  readonly delivered: readonly number[];
  readonly duplicates: readonly number[];
  readonly p99: number;
  readonly redisByCommand: Readonly<Record<string, number>>;
  readonly after?: Readonly<Record<string, number>>;
}

type Runner = (who: 'report' | 'plain') => Promise<ReportRunFigures & { distinct?: readonly number[] }>;

export const REPORT = { deadband: [{ absolute: 0.5 }], maxSilenceSeconds: 900 };
export const POINTS = 2000;
const TARGET = 1.2;

/** Per batch: commands per 1,000 entries over XACKs per 1,000 entries (one XACK a batch). */
const perBatch = (byCommand: Readonly<Record<string, number>>): Record<string, number> => {
  const batches = byCommand.xack ?? 0;
  return Object.fromEntries(Object.entries(byCommand).map(([c, n]) => [c, batches === 0 ? 0 : n / batches]));
};
const show = (m: Readonly<Record<string, number>>) => Object.entries(m).sort(([, a], [, b]) => b - a).map(([c, n]) => `${c} ${n.toFixed(2)}`).join(', ');

export const pushReport = async (run: Runner, rounds = Number(process.env.BENCH_ROUNDS ?? 3)) => {
  const rows: Row[] = [];
  const ratios: number[] = [];
  let memory: Record<string, number> = {};
  let sentShare = 0;
  let evalsPerBatch = 0;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['report', 'plain'] as const) : (['plain', 'report'] as const);
    const got: Partial<Record<'report' | 'plain', ReportRunFigures>> = {};
    for (const who of order) {
      const f = await run(who);
      got[who] = f;
      const batch = perBatch(f.redisByCommand);
      rows.push({
        round, who, produced: f.produced, 'CPU µs/entry': f.cpuUsPerPoint, 'p99 ms': f.p99,
        'sent share %': (Math.max(...f.delivered) * 100).toFixed(1), duplicates: f.duplicates.join('/'),
        'Redis per batch': show(batch),
      });
      if (who === 'plain' && f.delivered.some((d) => d < 1)) throw new Error(`a plain receiver did not get every entry: ${f.delivered.join(', ')}`);
      if (who === 'report') {
        if (new Set(f.delivered).size !== 1) throw new Error(`the report receivers got different counts: ${f.delivered.join(', ')}`);
        memory = { ...f.after };
        sentShare = f.delivered[0]!;
        evalsPerBatch = batch.eval ?? 0;
      }
    }
    ratios.push(got.report!.cpuUsPerPoint / got.plain!.cpuUsPerPoint);
  }
  printTable(`push-report (${POINTS} points, 5 webhooks with report ${JSON.stringify(REPORT)} against 5 plain ones; CPU of the connector per stream entry)`, rows);
  const ratio = median(ratios);
  printTable('push-report ratio (targets: CPU per entry report / plain <= 1.2, median of the rounds; one EVAL a batch)', [{
    'rounds\' ratios': ratios.map((x) => x.toFixed(3)).join(', '), 'median ratio': ratio, 'target met': String(ratio <= TARGET),
    'EVAL per batch': evalsPerBatch, 'entries sent %': (sentShare * 100).toFixed(1),
    'state bytes per point and webhook': memory.bytesPerPoint ?? 0, 'state points per webhook': memory.points ?? 0,
  }]);
  return { ratios, ratio, memory, sentShare, evalsPerBatch };
};
