import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import * as E from 'fp-ts/Either';

/**
 * The one reader of the PEM files that settings name — the Redis TLS parameters
 * (`Datastore:Tls*File`), the https listeners' (`Http:TlsCertFile`, `Http:TlsKeyFile`,
 * `Http:ClientCaFile`, CONTRACT 7.1) and a webhook's (`webhooks[N].tls.*`, `auth.oauth2.caFile`,
 * CONTRACT 4.5). One rule for each question, whoever asks it: a file that cannot be read, a CA
 * bundle, a certificate chain, a key, a certificate and key that make a pair. Every problem begins
 * with the setting's name and says why; a file's contents never appear in it.
 */
export type ReadFile = (path: string) => Buffer;

export const readFromDisk: ReadFile = (path) => readFileSync(path);

/**
 * Why a file named by a setting could not be used, in a few words: the file system's reason, or
 * OpenSSL's own words for PEM that does not load ("no start line", "key values mismatch").
 */
export const fileProblem = (err: unknown): string => {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file';
  if (e.code === 'EACCES') return 'permission denied';
  if (e.code === 'EISDIR') return 'is a directory';
  return (e.message ?? String(err)).replace(/^error:[0-9A-F]+:[^:]*:[^:]*:/i, '').trim();
};

const BEGIN = '-----BEGIN ';
const BEGIN_CERTIFICATE = '-----BEGIN CERTIFICATE-----';

const read = (field: string, path: string, from: ReadFile): E.Either<string, Buffer> => {
  try {
    return E.right(from(path));
  } catch (err) {
    return E.left(`${field}: cannot read ${path}: ${fileProblem(err)}`);
  }
};

/** Why the bytes hold no certificate: not PEM at all, or PEM of something else (a key). */
const noCertificate = (path: string, pem: Buffer): string | undefined => {
  const text = pem.toString('utf8');
  if (!text.includes(BEGIN)) return `${path} is not a PEM file`;
  return text.includes(BEGIN_CERTIFICATE) ? undefined : `${path} holds no PEM certificate`;
};

/** A CA bundle: PEM certificates that OpenSSL loads as trusted roots. */
export const readCaBundle = (field: string, path: string, from: ReadFile = readFromDisk): E.Either<string, Buffer> =>
  E.chain((ca: Buffer) => {
    const missing = noCertificate(path, ca);
    if (missing !== undefined) return E.left(`${field}: not a PEM certificate bundle: ${missing}`);
    try {
      createSecureContext({ ca });
      return E.right(ca);
    } catch (err) {
      return E.left(`${field}: not a PEM certificate bundle: ${fileProblem(err)}`);
    }
  })(read(field, path, from));

/** A certificate chain (the leaf first); whether its key matches is `keyPair`'s question. */
export const readCertificate = (field: string, path: string, from: ReadFile = readFromDisk): E.Either<string, Buffer> =>
  E.chain((cert: Buffer) => {
    const missing = noCertificate(path, cert);
    return missing === undefined ? E.right(cert) : E.left(`${field}: ${missing}`);
  })(read(field, path, from));

/** A private key in PEM (whether it loads, and with which certificate, is `keyPair`'s question). */
export const readKey = (field: string, path: string, from: ReadFile = readFromDisk): E.Either<string, Buffer> =>
  E.chain((key: Buffer) => (key.toString('utf8').includes(BEGIN) ? E.right(key) : E.left(`${field}: ${path} is not a PEM file`)))(read(field, path, from));

/** A certificate and a key that OpenSSL loads together (the key is the certificate's). */
export const keyPair = (certField: string, keyField: string, cert: Buffer, key: Buffer): E.Either<string, { readonly cert: Buffer; readonly key: Buffer }> => {
  try {
    createSecureContext({ cert, key });
    return E.right({ cert, key });
  } catch (err) {
    return E.left(`${certField} and ${keyField} do not load as a pair: ${fileProblem(err)}`);
  }
};
