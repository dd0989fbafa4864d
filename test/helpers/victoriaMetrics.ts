import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../support/freePort';
import { killed } from './cli';

/** One series as VictoriaMetrics' export API gives it. */
export interface Series {
  readonly metric: Record<string, string>;
  readonly values: number[];
  readonly timestamps: number[];
}

/**
 * A private VictoriaMetrics (Debian's `victoria-metrics` package) on a loopback port, with its own
 * data directory: started and stopped by the tests (`kill` and `run` again keep its data). It answers
 * 204 to lines it cannot parse and keeps a sample sent twice twice (no `-dedup.minScrapeInterval`):
 * only a read-back with its export API shows what it kept.
 */
export class VictoriaMetrics {
  private p: ChildProcess | undefined;
  private log = '';
  private constructor(private readonly dir: string, private readonly port: number, readonly url: string) {}

  static async start(): Promise<VictoriaMetrics> {
    const dir = mkdtempSync(join(tmpdir(), 'victoria-metrics-'));
    const port = await freePort();
    const vm = new VictoriaMetrics(dir, port, `http://127.0.0.1:${port}`);
    await vm.run();
    return vm;
  }

  /** Starts the server (again) and waits until `/health` answers. */
  async run(): Promise<void> {
    this.p = spawn('victoria-metrics', [
      `-storageDataPath=${this.dir}`, `-httpListenAddr=127.0.0.1:${this.port}`,
      // what was written is searchable at once (the default hides the last 30 s)
      '-search.latencyOffset=0s', '-retentionPeriod=100y',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b: Buffer) => {
      this.log = (this.log + b.toString('utf8')).slice(-65536);
    };
    this.p.stdout?.on('data', keep);
    this.p.stderr?.on('data', keep);
    const started = Date.now();
    for (;;) {
      if (this.p.exitCode !== null) throw new Error(`victoria-metrics exited with ${this.p.exitCode}: ${this.log.slice(-2000)}`);
      const ok = await fetch(`${this.url}/health`).then((r) => r.status === 200, () => false);
      if (ok) return;
      if (Date.now() - started > 30000) throw new Error('victoria-metrics did not answer /health in 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * SIGSTOP: the server holds its connections and answers nothing (cut off, as behind a dead link),
   * and keeps what it stored; `resume` (SIGCONT) lets it go on. (After a SIGKILL it loses the samples
   * of its last seconds, answered 204 but not yet written to disk: measured here with 1.79.)
   */
  pause(): void {
    this.p?.kill('SIGSTOP');
  }

  resume(): void {
    this.p?.kill('SIGCONT');
  }

  /** SIGKILL. */
  async kill(): Promise<void> {
    await killed(this.p);
  }

  /** Every series whose name matches the regular expression, as stored (after a flush of what it buffers). */
  async export(nameRegex: string): Promise<Series[]> {
    await fetch(`${this.url}/internal/force_flush`);
    const res = await fetch(`${this.url}/api/v1/export?${new URLSearchParams({ 'match[]': `{__name__=~"${nameRegex}"}` }).toString()}`);
    if (res.status !== 200) throw new Error(`export: HTTP ${res.status}: ${await res.text()}`);
    return (await res.text()).split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Series);
  }

  /** What it logged of lines it could not parse (answered 204 all the same). */
  unparsed(): string[] {
    return this.log.split('\n').filter((l) => l.includes('cannot unmarshal') || l.includes('cannot parse'));
  }

  async close(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
