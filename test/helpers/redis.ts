import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../support/freePort';
import { startRedisServer } from '../../support/redisServer';
export { freePort };


/**
 * A private redis-server on a free loopback port, with its own data directory and an
 * append-only file, so that `stop()` + `start()` mid-test keeps the data (as a real deployment
 * with persistence would). Never touches a Redis it did not start.
 */
export class TestRedis {
  private proc: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), 'rc-redis-'));
  private constructor(readonly port: number) {}

  static async start(): Promise<TestRedis> {
    const r = new TestRedis(await freePort());
    await r.start();
    return r;
  }

  get url(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await this.stopping;
    if (this.proc !== undefined && this.proc.exitCode === null) return;
    this.proc = await startRedisServer(this.port, this.dir, 200);
  }

  private stopping: Promise<void> = Promise.resolve();

  /** SIGTERM: redis-server flushes its append-only file and exits. A start() waits for it. */
  stop(): Promise<void> {
    const proc = this.proc;
    if (proc === undefined || proc.exitCode !== null) return this.stopping;
    this.stopping = new Promise<void>((resolve) => {
      proc.once('exit', () => {
        this.proc = undefined;
        resolve();
      });
      proc.kill('SIGTERM');
    });
    return this.stopping;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A client for the test's own checks. */
  client(): Redis {
    const c = new Redis({ port: this.port, host: '127.0.0.1', protocol: 2, maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    return c;
  }
}

/**
 * A private redis-server for the whole test file and a client for the test's own checks, started
 * before its first test and removed after its last: `const r = privateRedis();` then `r.redis`,
 * `r.client` inside the tests.
 */
export const privateRedis = (): { redis: TestRedis; client: Redis } => {
  const ctx = {} as { redis: TestRedis; client: Redis };
  beforeAll(async () => {
    ctx.redis = await TestRedis.start();
    ctx.client = ctx.redis.client();
  });
  afterAll(async () => {
    ctx.client.disconnect();
    await ctx.redis.destroy();
  });
  return ctx;
};

/**
 * The commands Redis ran while `f` ran, by name in lower case, a script's commands too (MONITOR on a
 * connection of its own). MONITOR's feed may trail the answer: a PING of our own marks its end.
 */
export const monitored = async <A>(client: Redis, f: () => Promise<A>): Promise<{ result: A; commands: string[] }> => {
  const monitor = await client.monitor();
  const commands: string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => commands.push(String(args[0]).toLowerCase()));
  const result = await f();
  await client.ping('end');
  for (let i = 0; i < 100 && !commands.includes('ping'); i++) await new Promise((r) => setTimeout(r, 10));
  monitor.disconnect();
  return { result, commands };
};

/**
 * The README's `ACL SETUSER` line as the arguments of `ACL`, for `user` with `password`
 * (`client.call('ACL', ...readmeAcl(…))`).
 */
export const readmeAcl = (user: string, password: string): string[] => {
  const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
  const line = readme.split('\n').find((l) => l.startsWith('ACL SETUSER rest-connectors '));
  if (line === undefined) throw new Error('README has no ACL SETUSER line');
  return line.replace('ACL SETUSER rest-connectors ', `ACL SETUSER ${user} `).replace('>change-me', `>${password}`).split(' ').slice(1);
};
