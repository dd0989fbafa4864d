import { spawn, type ChildProcess } from 'node:child_process';
import { BIN_PATH } from '../../src/version';

/** The file package.json `bin` names: the command an install puts on PATH (npm test builds it first). */
export const CLI = BIN_PATH;

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI to its end (npm test builds it first). */
export const runCli = (args: string[], env: Record<string, string> = {}, options: { cwd?: string; timeoutMs?: number } = {}): Promise<Run> =>
  new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`CLI ${args.join(' ')} did not exit in time; stdout: ${stdout} stderr: ${stderr}`));
    }, options.timeoutMs ?? 15000);
    // 'close': exited and its output read to the end (after 'exit', output may still be on its way)
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

/** A long-running connector process, its output collected as it runs. */
export class Connector {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  readonly proc: ChildProcess;

  constructor(kind: 'outbound' | 'inbound', env: Record<string, string>, cwd?: string) {
    this.proc = spawn(process.execPath, [CLI, kind], { env: { PATH: process.env.PATH ?? '', ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    // 'close', not 'exit': the process has exited *and* its output has been read to the end, so
    // logs() after a stop holds every line it wrote ('exit' can come first on a loaded machine)
    this.exited = new Promise((resolve) => this.proc.on('close', (code) => resolve(code)));
  }

  /** Parsed pino lines so far. */
  logs(): Array<Record<string, unknown>> {
    return this.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async waitForLog(predicate: (l: Record<string, unknown>) => boolean, timeoutMs = 20000): Promise<Record<string, unknown>> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const found = this.logs().find(predicate);
      if (found) return found;
      if (this.proc.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`log line not seen; stdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.proc.exitCode === null) this.proc.kill(signal);
    return this.exited;
  }
}

/** Polls `fn` until it returns a value that is not undefined, or fails after `timeoutMs`. */
export const eventually = async <A>(fn: () => Promise<A | undefined> | A | undefined, timeoutMs = 20000, what = 'condition'): Promise<A> => {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
};

/** SIGKILLs a server process the tests started, once it has not exited already; resolves once it has. */
export const killed = async (p: ChildProcess | undefined): Promise<void> => {
  if (p === undefined || p.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });
};
