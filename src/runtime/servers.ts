import { createServer, STATUS_CODES, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import type { HostUrl } from '../config/managed';

export interface Listening {
  readonly servers: readonly Server[];
  readonly addresses: readonly string[];
  /** Stops accepting, lets in-flight requests finish, then cuts what is left after `graceMs`. */
  close(graceMs: number): Promise<void>;
  /** CONTRACT 7.1: new connections to the https listeners get this certificate; open ones keep theirs. */
  setTls(tls: SecureContextOptions): void;
}

/** CONTRACT 7.1: what https listeners serve and ask of clients. */
export interface ListenerTls {
  /** The certificate chain, key and client CA (PEM); replaced by `setTls` on rotation. */
  readonly context: SecureContextOptions;
  readonly clientCertificates: 'off' | 'optional' | 'required';
}

/** Set once a stop begins: every answer from then on closes its connection. */
interface StopFlag {
  stopping: boolean;
  /** Answers under way, whose headers may not have gone out yet. */
  readonly open: Set<ServerResponse>;
}

/** CONTRACT 6.5: connections beyond `maxConnections` are closed at once; slow headers and requests are cut. */
export interface ServerLimits {
  readonly maxConnections: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

const DEFAULT_LIMITS: ServerLimits = { maxConnections: 1024, headersTimeoutMs: 10000, requestTimeoutMs: 30000 };

const listenOne = (app: RequestListener, host: string, port: number, flag: StopFlag, limits: ServerLimits, tls?: ListenerTls): Promise<Server> =>
  new Promise((resolve, reject) => {
    // Node checks the headers and request timeouts only this often (30 s by default)
    const busy = new Set<Socket>();
    const closeAfter = new Set<Socket>();
    const connectionsCheckingInterval = Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4)));
    const handler: RequestListener = (req, res) => {
      const socket = req.socket;
      busy.add(socket);
      res.once('close', () => {
        busy.delete(socket);
        if (closeAfter.delete(socket)) socket.destroySoon();
      });
      if (flag.stopping) res.setHeader('Connection', 'close');
      else {
        flag.open.add(res);
        res.once('close', () => flag.open.delete(res));
      }
      app(req, res);
    };
    const server: Server =
      tls === undefined
        ? createServer({ connectionsCheckingInterval }, handler)
        : (createHttpsServer(
            {
              ...tls.context,
              connectionsCheckingInterval,
              // TLS 1.2 or newer (CONTRACT 7.1); a client CA makes the listener ask for a certificate,
              // which `required` demands in the handshake and `optional` only verifies
              minVersion: 'TLSv1.2',
              requestCert: tls.clientCertificates !== 'off',
              rejectUnauthorized: tls.clientCertificates === 'required',
              // a client that never finishes its handshake is cut like one that never finishes its headers
              handshakeTimeout: limits.headersTimeoutMs,
            },
            handler,
          ) as unknown as Server);
    server.keepAliveTimeout = 5000;
    server.maxConnections = limits.maxConnections;
    // Node wants the headers' limit within the whole request's
    server.headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
    server.requestTimeout = limits.requestTimeoutMs;
    // A malformed request after a complete one on the same connection (e.g. a stray byte) must not
    // get Node's raw 400 while the complete one's write is under way: the answer under way is sent
    // first, then the connection is closed (CONTRACT 6.5). With nothing under way: 400, then close.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (socket.destroyed || !socket.writable) return;
      if (busy.has(socket)) {
        closeAfter.add(socket);
        return;
      }
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      // end() alone only half-closes: a client that never closes its side (one that dribbles a
      // header byte now and then) would keep the connection, and its slot of maxConnections, for
      // ever. The answer goes out, then the connection is destroyed; at the latest after a second.
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
      setTimeout(() => socket.destroy(), 1000).unref();
    });
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });

/** `*`, `+` and `[::]` mean every interface: `::` (dual stack), or `0.0.0.0` where IPv6 is off. */
const listenUrl = async (app: RequestListener, url: HostUrl, flag: StopFlag, limits: ServerLimits, tls?: ListenerTls): Promise<Server> => {
  const own = url.https ? tls : undefined;
  if (url.https && own === undefined) throw new Error(`${url.url} needs a certificate (Http:TlsCertFile and Http:TlsKeyFile)`);
  if (url.host !== undefined) return listenOne(app, url.host, url.port, flag, limits, own);
  try {
    return await listenOne(app, '::', url.port, flag, limits, own);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EAFNOSUPPORT' || code === 'EADDRNOTAVAIL') return listenOne(app, '0.0.0.0', url.port, flag, limits, own);
    throw err;
  }
};

export const isHttps = (s: Server): boolean => 'setSecureContext' in s;

const describe = (s: Server): string => {
  const a = s.address() as AddressInfo;
  const scheme = isHttps(s) ? 'https' : 'http';
  return a.family === 'IPv6' ? `${scheme}://[${a.address}]:${a.port}` : `${scheme}://${a.address}:${a.port}`;
};

/**
 * The graceful stop of the HTTP side: new connections are refused (the listening sockets close),
 * idle keep-alive connections are closed at once and as soon as a busy one becomes idle, every
 * answer from then on carries `Connection: close`, and in-flight requests finish; what is left
 * after `graceMs` is cut.
 */
export const listenAll = async (app: RequestListener, urls: readonly HostUrl[], limits: ServerLimits = DEFAULT_LIMITS, tls?: ListenerTls): Promise<Listening> => {
  const servers: Server[] = [];
  const flag: StopFlag = { stopping: false, open: new Set() };
  try {
    for (const url of urls) servers.push(await listenUrl(app, url, flag, limits, tls));
  } catch (err) {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    throw err;
  }
  return {
    servers,
    addresses: servers.map(describe),
    setTls: (context) => {
      for (const s of servers) if (isHttps(s)) (s as unknown as HttpsServer).setSecureContext(context);
    },
    close: (graceMs) => {
      flag.stopping = true;
      for (const res of flag.open) if (!res.headersSent) res.setHeader('Connection', 'close');
      return Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              const timer = setTimeout(() => s.closeAllConnections(), graceMs);
              // a connection whose answer was already under way when the stop began goes idle later
              const idle = setInterval(() => s.closeIdleConnections(), 50);
              s.close(() => {
                clearTimeout(timer);
                clearInterval(idle);
                resolve();
              });
              s.closeIdleConnections();
            }),
        ),
      ).then(() => undefined);
    },
  };
};
