import type { SecureContextOptions } from 'node:tls';
import * as E from 'fp-ts/Either';
import { keyPair, readCaBundle, readCertificate, readFromDisk, readKey, type ReadFile } from './pem';
import { PARAMETERS, type StartupSettings } from './startup';

/**
 * CONTRACT 7.1: the https listeners' certificate chain and key (`Http:TlsCertFile`,
 * `Http:TlsKeyFile`) and the client CA (`Http:ClientCaFile`), read and checked as a whole by the
 * one PEM reader — a chain and key that make a pair, a CA bundle that loads. (They are watched for
 * changes at run time: `src/runtime/certificateWatch.ts`.)
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

/** Reads and checks the files; the first problem, naming its parameter. */
export const loadListenerTls = (f: ListenerFiles, read: ReadFile = readFromDisk): E.Either<string, SecureContextOptions> => {
  const cert = readCertificate(PARAMETERS.http.tlsCertFile, f.certFile, read);
  if (E.isLeft(cert)) return cert;
  const key = readKey(PARAMETERS.http.tlsKeyFile, f.keyFile, read);
  if (E.isLeft(key)) return key;
  const pair = keyPair(PARAMETERS.http.tlsCertFile, PARAMETERS.http.tlsKeyFile, cert.right, key.right);
  if (E.isLeft(pair)) return pair;
  if (f.clientCaFile === undefined) return E.right({ ...pair.right });
  return E.map((ca: Buffer): SecureContextOptions => ({ ...pair.right, ca }))(readCaBundle(PARAMETERS.http.clientCaFile, f.clientCaFile, read));
};
