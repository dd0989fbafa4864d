import type { Express } from 'express';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HostUrl } from '../config/managed';

export interface Listening {
  readonly servers: readonly Server[];
  readonly addresses: readonly string[];
  /** Stops accepting, lets in-flight requests finish, then cuts what is left after `graceMs`. */
  close(graceMs: number): Promise<void>;
}

const listenOne = (app: Express, host: string, port: number): Promise<Server> =>
  new Promise((resolve, reject) => {
    const server = createServer(app);
    server.keepAliveTimeout = 5000;
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });

/** `*`, `+` and `[::]` mean every interface: `::` (dual stack), or `0.0.0.0` where IPv6 is off. */
const listenUrl = async (app: Express, url: HostUrl): Promise<Server> => {
  if (url.host !== undefined) return listenOne(app, url.host, url.port);
  try {
    return await listenOne(app, '::', url.port);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EAFNOSUPPORT' || code === 'EADDRNOTAVAIL') return listenOne(app, '0.0.0.0', url.port);
    throw err;
  }
};

const describe = (s: Server): string => {
  const a = s.address() as AddressInfo;
  return a.family === 'IPv6' ? `http://[${a.address}]:${a.port}` : `http://${a.address}:${a.port}`;
};

export const listenAll = async (app: Express, urls: readonly HostUrl[]): Promise<Listening> => {
  const servers: Server[] = [];
  try {
    for (const url of urls) servers.push(await listenUrl(app, url));
  } catch (err) {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    throw err;
  }
  return {
    servers,
    addresses: servers.map(describe),
    close: (graceMs) =>
      Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              const timer = setTimeout(() => s.closeAllConnections(), graceMs);
              s.close(() => {
                clearTimeout(timer);
                resolve();
              });
              s.closeIdleConnections();
            }),
        ),
      ).then(() => undefined),
  };
};
