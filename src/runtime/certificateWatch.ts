import { statSync } from 'node:fs';
import type { SecureContextOptions } from 'node:tls';
import * as E from 'fp-ts/Either';
import { loadListenerTls, type ListenerFiles } from '../config/listenerTls';
import type { Logger } from './logger';

/**
 * CONTRACT 7.1: the https listeners' certificate, key and client CA are watched while the connector
 * runs: a change to any of them (a file rewritten, or the symlink swap of a mounted Kubernetes
 * Secret) is read again, and a new set that loads replaces the old one for new connections; one
 * that does not is reported and the old one kept.
 */

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
