import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The programs that the tests, the demo, the benchmarks and the chaos run start, and how to get
 * each: checked before anything runs, so that a machine without one is told at once, in one
 * message, what to install (`.ci/run` installs them with apt-get).
 */
export interface Program {
  readonly program: string;
  /** What needs it. */
  readonly for: string;
  /** The Debian/Ubuntu package and the Homebrew formula that bring it. */
  readonly debian: string;
  readonly macos: string;
}

export const PROGRAMS: readonly Program[] = [
  { program: 'redis-server', for: 'every test against Redis, the demo, the benchmarks and the chaos run', debian: 'redis-server', macos: 'redis' },
  { program: 'redis-sentinel', for: 'the Sentinel failover tests', debian: 'redis-sentinel', macos: 'redis' },
  { program: 'openssl', for: 'the certificates of the TLS tests and benchmarks', debian: 'openssl', macos: 'openssl' },
  { program: 'promtool', for: 'the metrics format and alert rule tests', debian: 'prometheus', macos: 'prometheus' },
  { program: 'influxd', for: 'the influx-line format test against a real InfluxDB 1.x', debian: 'influxdb', macos: 'influxdb@1' },
  { program: 'victoria-metrics', for: 'the influx-line and JSONata import tests against a real VictoriaMetrics', debian: 'victoria-metrics', macos: 'victoriametrics' },
  { program: 'chromium', for: 'the operator page tests in a real browser (playwright-core drives it)', debian: 'chromium', macos: 'chromium' },
];

/** Whether `program` is an executable file in one of the `PATH` directories. */
const onPath = (program: string, path: string): boolean =>
  path.split(delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });

/** The programs of `needed` (names from `PROGRAMS`) that `PATH` lacks. */
export const missingPrograms = (needed: readonly string[], path: string = process.env.PATH ?? ''): Program[] =>
  PROGRAMS.filter((p) => needed.includes(p.program) && !onPath(p.program, path));

/** One message: what is missing, what needs it, and the commands that install it. */
export const missingMessage = (missing: readonly Program[]): string => {
  const unique = (xs: string[]) => [...new Set(xs)].join(' ');
  return [
    `missing on PATH: ${missing.map((p) => p.program).join(', ')}`,
    ...missing.map((p) => `  ${p.program}: ${p.for}`),
    'install it with',
    `  Debian/Ubuntu: sudo apt-get install ${unique(missing.map((p) => p.debian))}`,
    `  macOS:         brew install ${unique(missing.map((p) => p.macos))}`,
  ].join('\n');
};

/** Throws the message when any of `needed` is missing. */
export const requirePrograms = (needed: readonly string[], path?: string): void => {
  const missing = missingPrograms(needed, path);
  if (missing.length > 0) throw new Error(missingMessage(missing));
};
