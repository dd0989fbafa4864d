import { readFileSync, statSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import * as E from 'fp-ts/Either';
import { PARAMETERS, type StartupSettings } from '../config/startup';
import type { Logger } from './logger';
import { fileProblem } from '../config/fileProblem';

/**
 * CONTRACT 7.1: the https listeners' certificate chain and key (`Http:TlsCertFile`,
 * `Http:TlsKeyFile`) and the client CA (`Http:ClientCaFile`), read and checked as a whole — a
 * chain and key that make a pair, a CA that holds a certificate — and watched: a change to any of
 * them (a file rewritten, or the symlink swap of a mounted Kubernetes Secret) is read again, and a
 * new set that loads replaces the old one for new connections; one that does not is reported and
 * the old one kept.
 */
export interface ListenerFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile?: string;
}

export const listenerFiles = (s: StartupSettings): ListenerFiles | undefined =>
  s.http.tlsCertFile !== undefined && s.http.tlsKeyFile !== undefined
    ? { certFile: s.http.tlsCertFile, keyFile: s.http.tlsKeyFile, ...(s.http.clientCaFile !== undefined ? { clientCaFile: s.http.clientCaFile } : {}) }
    : undefined;


/** Reads and checks the files; every problem names its parameter. */
export const loadListenerTls = (f: ListenerFiles): E.Either<string, SecureContextOptions> => {
  const read = (param: string, path: string): E.Either<string, Buffer> => {
    try {
      return E.right(readFileSync(path));
    } catch (err) {
      return E.left(`${param}: cannot read ${path}: ${fileProblem(err)}`);
    }
  };
  const cert = read(PARAMETERS.httpTlsCertFile, f.certFile);
  if (E.isLeft(cert)) return cert;
  const key = read(PARAMETERS.httpTlsKeyFile, f.keyFile);
  if (E.isLeft(key)) return key;
  if (!cert.right.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) return E.left(`${PARAMETERS.httpTlsCertFile}: ${f.certFile} holds no PEM certificate`);
  try {
    createSecureContext({ cert: cert.right, key: key.right });
  } catch (err) {
    return E.left(`${PARAMETERS.httpTlsCertFile} and ${PARAMETERS.httpTlsKeyFile} do not load as a pair: ${fileProblem(err)}`);
  }
  let ca: Buffer | undefined;
  if (f.clientCaFile !== undefined) {
    const got = read(PARAMETERS.clientCaFile, f.clientCaFile);
    if (E.isLeft(got)) return got;
    ca = got.right;
    if (!ca.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) return E.left(`${PARAMETERS.clientCaFile}: ${f.clientCaFile} holds no PEM certificate`);
    try {
      createSecureContext({ ca });
    } catch (err) {
      return E.left(`${PARAMETERS.clientCaFile}: ${fileProblem(err)}`);
    }
  }
  return E.right({ cert: cert.right, key: key.right, ...(ca !== undefined ? { ca } : {}) });
};

/** What identifies a file's content as the file system sees it (following symlinks): a change of any part is a change. */
const stamp = (path: string): string => {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch (err) {
    return `missing:${(err as NodeJS.ErrnoException).code ?? ''}`;
  }
};

/**
 * Polls the files every `intervalMs` (2 s: within the 10 s the contract allows, cheap — three
 * `stat`s); on a change, loads them: a set that loads goes to the listeners (`setTls`: new
 * connections get it, open ones keep theirs) and is logged; one that does not is logged as an error
 * (once per change) and the old one stays. Polling, not `fs.watch`: a Secret's symlink swap
 * replaces the directory the watched name points into, which inotify on the old target never reports.
 */
export const watchListenerTls = (
  f: ListenerFiles, intervalMs: number, listeners: { setTls(tls: SecureContextOptions): void }, log: Logger,
): { stop(): void } => {
  const apply = (context: SecureContextOptions) => {
    listeners.setTls(context);
    log.info({ certFile: f.certFile }, 'listener certificate reloaded: new connections get it');
  };
  const failed = (reason: string) => log.error({ reason }, 'new listener certificate does not load; keeping the current one');
  const paths = [f.certFile, f.keyFile, ...(f.clientCaFile !== undefined ? [f.clientCaFile] : [])];
  const now = () => paths.map(stamp).join('|');
  let last = now();
  const timer = setInterval(() => {
    const seen = now();
    if (seen === last) return;
    last = seen;
    const loaded = loadListenerTls(f);
    if (E.isRight(loaded)) apply(loaded.right);
    else failed(loaded.left);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
};
