import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';

/**
 * A private redis-server for the demo's, the tests' and the chaos run's own use: started on a
 * loopback port with an append-only file in `dir` (fsync always, so a SIGKILL loses no answered
 * write), resolved once it answers PING. Never a Redis it did not start.
 */
export const startRedisServer = async (port: number, dir: string, attempts = 400): Promise<ChildProcess> => {
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--protected-mode', 'yes'],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < attempts; i++) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, protocol: 2 });
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
