import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../support/freePort';
import { killed } from './cli';

/**
 * A private InfluxDB 1.x (Debian's `influxdb` package) on loopback ports, with its own data
 * directories: started and stopped by the tests (`kill` and `start` again keep its data).
 */
export class InfluxDb {
  private p: ChildProcess | undefined;
  private constructor(private readonly dir: string, private readonly config: string, readonly url: string) {}

  static async start(): Promise<InfluxDb> {
    const dir = mkdtempSync(join(tmpdir(), 'influxdb-'));
    const [http, rpc] = [await freePort(), await freePort()];
    const config = join(dir, 'influxdb.conf');
    writeFileSync(config, [
      'reporting-disabled = true',
      `bind-address = "127.0.0.1:${rpc}"`,
      '[meta]', `  dir = "${join(dir, 'meta')}"`,
      '[data]', `  dir = "${join(dir, 'data')}"`, `  wal-dir = "${join(dir, 'wal')}"`, '  query-log-enabled = false',
      '[http]', `  bind-address = "127.0.0.1:${http}"`, '  log-enabled = false',
      '[monitor]', '  store-enabled = false',
      '',
    ].join('\n'));
    const db = new InfluxDb(dir, config, `http://127.0.0.1:${http}`);
    await db.run();
    return db;
  }

  /** Starts the server (again) and waits until `/ping` answers. */
  async run(): Promise<void> {
    this.p = spawn('influxd', ['run', '-config', this.config], { stdio: 'ignore' });
    const started = Date.now();
    for (;;) {
      if (this.p.exitCode !== null) throw new Error(`influxd exited with ${this.p.exitCode}`);
      const ok = await fetch(`${this.url}/ping`).then((r) => r.status === 204, () => false);
      if (ok) return;
      if (Date.now() - started > 30000) throw new Error('influxd did not answer /ping in 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGKILL: what is written stays in its WAL. */
  async kill(): Promise<void> {
    await killed(this.p);
  }

  /** An InfluxQL statement; the first series' rows as objects (times as epoch milliseconds). */
  async query(q: string, db?: string): Promise<Array<Record<string, unknown>>> {
    const res = await fetch(`${this.url}/query?epoch=ms${db === undefined ? '' : `&db=${db}`}&q=${encodeURIComponent(q)}`, { method: 'POST' });
    const json = (await res.json()) as { results: Array<{ error?: string; series?: Array<{ columns: string[]; values: unknown[][] }> }> };
    const r = json.results[0]!;
    if (r.error !== undefined) throw new Error(r.error);
    const s = r.series?.[0];
    return s === undefined ? [] : s.values.map((v) => Object.fromEntries(s.columns.map((c, i) => [c, v[i]])));
  }

  async close(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
