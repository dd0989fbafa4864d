import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { freePort } from '../support/freePort';
import { BIN_PATH } from '../src/version';
export { freePort };

export const DIST = join(__dirname, '..');
export const CLI = BIN_PATH;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

/** A private redis-server for the benchmark (never the machine's own). */
export const startRedis = async (): Promise<{ port: number; stop(): Promise<void> }> => {
  const port = await freePort();
  const p = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await sleep(300);
  return { port, stop: () => new Promise((r) => (p.exitCode !== null ? r() : (p.once('exit', () => r()), p.kill('SIGTERM')))) };
};

export const httpGet = (url: string): Promise<{ status: number; bytes: number }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => (bytes += d.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });

export const waitReady = async (url: string, timeoutMs = 15000): Promise<void> => {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      if ((await httpGet(url)).status === 200) return;
    } catch {
      /* not yet */
    }
    await sleep(50);
  }
  throw new Error(`${url} not ready`);
};

/** Node options for our connector processes only, e.g. `BENCH_CONNECTOR_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` (Node refuses --cpu-prof in NODE_OPTIONS). */
const CONNECTOR_NODE_ARGS = (process.env.BENCH_CONNECTOR_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

/** A connector process of ours, logging to /dev/null (pino still formats and writes every line). */
export const startConnector = (kind: 'inbound' | 'outbound', env: Record<string, string>, cli = CLI): ChildProcess =>
  spawn(process.execPath, [...CONNECTOR_NODE_ARGS, cli, kind], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });

/** Node options for the bare pipeline of push-formats only (`bench/pushBare.ts`), as `BENCH_CONNECTOR_NODE_ARGS` for ours: to profile both alike. */
const BARE_NODE_ARGS = (process.env.BENCH_BARE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

export const startScript = (file: string, args: string[], env: Record<string, string> = {}): ChildProcess =>
  fork(join(__dirname, file), args, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...(file === 'pushBare.js' ? { execArgv: BARE_NODE_ARGS } : {}) });

export const stop = (p: ChildProcess): Promise<void> =>
  new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r() : (p.once('exit', () => r()), p.kill('SIGTERM'))));

/** Resident set size and its peak (kB → MB) from /proc; `resetPeak` clears VmHWM (root). */
export const memory = (pid: number): { rssMb: number; peakMb: number } => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
};
export const resetPeak = (pid: number): void => writeFileSync(`/proc/${pid}/clear_refs`, '5');

/** One message from a forked script. */
export const nextMessage = <A>(p: ChildProcess): Promise<A> => new Promise((resolve) => p.once('message', (m) => resolve(m as A)));

export const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;


export type Row = Record<string, string | number>;

export const printTable = (title: string, rows: Row[]): void => {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: string | number | undefined) => (v === undefined ? '' : typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => `| ${vals.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  process.stdout.write(`\n${title}\n${line(cols)}\n${line(widths.map((w) => '-'.repeat(w)))}\n`);
  for (const r of rows) process.stdout.write(`${line(cols.map((c) => cell(r[c])))}\n`);
};

export const saveResult = (scenario: string, data: unknown): string => {
  const dir = join(DIST, '..', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ scenario, at: new Date().toISOString(), seconds: SECONDS, ...((data as object) ?? {}) }, null, 2));
  return file;
};

/** CPU time (user + system) a process has used so far, in milliseconds, from /proc/PID/stat. */
export const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  // after "pid (comm) ": state is field 0, utime field 11, stime field 12, in clock ticks (100 Hz)
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** A process's stat fields after "pid (comm) " (state is field 0), or undefined when it is gone. */
const statOf = (pid: number): string[] | undefined => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  } catch {
    return undefined;
  }
};

/**
 * CPU time (user + system) of a process and every live process under it (a connector's JSONata
 * evaluation processes, CONTRACT 4.7), plus what its children that ended have used (cutime, cstime),
 * in milliseconds: the whole job's CPU, wherever it runs.
 */
export const treeCpuMs = (pid: number): number => treeCpu(pid).total;

/** `treeCpuMs`, with the system (kernel) part apart: what the process's syscalls cost — sockets, mostly. */
export const treeCpu = (pid: number): { total: number; system: number } => {
  const parents = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const f = statOf(Number(name));
    if (f === undefined) continue;
    const ppid = Number(f[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(name)]);
  }
  let ticks = 0;
  let system = 0;
  const own = statOf(pid);
  if (own !== undefined) {
    ticks += Number(own[13]) + Number(own[14]);
    system += Number(own[14]);
  }
  const walk = (p: number): void => {
    const f = statOf(p);
    if (f !== undefined) {
      ticks += Number(f[11]) + Number(f[12]);
      system += Number(f[12]);
    }
    for (const c of parents.get(p) ?? []) walk(c);
  };
  walk(pid);
  return { total: ticks * 10, system: system * 10 };
};
