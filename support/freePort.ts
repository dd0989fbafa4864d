import { createServer } from 'node:net';

/**
 * Ports are taken below the kernel's ephemeral range (Linux 32768–60999, macOS 49152–65535): a
 * port the kernel handed out for bind(0) and that was released can be given again at once to any
 * outgoing connection on the machine (a client of Redis, a browser), and the server that was to
 * listen on it then fails with EADDRINUSE (seen on a busy CI machine). Below that range only
 * another listener can take it, and each candidate is bound once to see that none has.
 */
const LOW = 10000;
const HIGH = 32767;

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A port the kernel picks (bind 0), when no port below its ephemeral range is free. */
const ephemeral = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

/** A free loopback port (demo, tests, benchmarks): a random one below the ephemeral range that nothing listens on. */
export const freePort = async (): Promise<number> => {
  for (let tries = 0; tries < 50; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (await bindable(port)) return port;
  }
  return ephemeral();
};
