import { spawn, type ChildProcess } from 'node:child_process';
import { Redis, type RedisOptions } from 'ioredis';

export interface ServerOptions {
  /** More arguments (`--replicaof`, TLS, …), or a config file first for a sentinel. */
  readonly args?: readonly string[];
  /** The program: `redis-server` (default) or `redis-sentinel`. */
  readonly program?: string;
  /** Replaces the default arguments (port, dir, append-only file) entirely: for sentinels. */
  readonly replaceArgs?: boolean;
  /** How the readiness PING connects (TLS options, a password). */
  readonly probe?: Partial<RedisOptions>;
}

/**
 * A private redis-server for the demo's, the tests' and the chaos run's own use: started on a
 * loopback port with an append-only file in `dir` (fsync always, so a SIGKILL loses no answered
 * write), resolved once it answers PING. Never a Redis it did not start.
 */
export const startRedisServer = async (port: number, dir: string, attempts = 400, o: ServerOptions = {}): Promise<ChildProcess> => {
  const base = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--protected-mode', 'yes'];
  const proc = spawn(o.program ?? 'redis-server', o.replaceArgs === true ? [...(o.args ?? [])] : [...base, ...(o.args ?? [])], { stdio: 'ignore' });
  for (let i = 0; i < attempts; i++) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, protocol: 2, ...o.probe });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.ping();
      c.disconnect();
      return proc;
    } catch {
      c.disconnect();
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  proc.kill('SIGKILL');
  throw new Error('redis-server did not start');
};
