import * as E from 'fp-ts/Either';
import type { Webhook } from './webhookSettings';
import { fileProblem, keyPair, readCaBundle, readCertificate, readFromDisk, readKey, type ReadFile } from './pem';

/**
 * The files a webhook's settings name (CONTRACT 4.5): its TLS CA bundle, client certificate and
 * key, its OAuth 2.0 token endpoint's CA and client secret — read once, at start, and checked by
 * the one PEM reader (`pem.ts`). Every problem names its field; a file's contents never appear in
 * a message.
 */
export interface WebhookTlsMaterial {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
}

export interface WebhookFiles {
  readonly tls?: WebhookTlsMaterial;
  readonly oauth2?: { readonly clientSecret: string; readonly ca?: Buffer };
}

export const loadWebhookFiles = (webhooks: readonly Webhook[], read: ReadFile = readFromDisk): E.Either<string[], WebhookFiles[]> => {
  const errors: string[] = [];
  /** The file's contents, or undefined (its problem recorded) when it is not set or not usable. */
  const take = (got: E.Either<string, Buffer> | undefined): Buffer | undefined => {
    if (got === undefined) return undefined;
    if (E.isLeft(got)) errors.push(got.left);
    return E.isRight(got) ? got.right : undefined;
  };
  const files = webhooks.map((w, i): WebhookFiles => {
    const at = `webhooks[${i}]`;
    let tls: WebhookTlsMaterial | undefined;
    if (w.tls !== undefined) {
      const ca = take(w.tls.caFile === undefined ? undefined : readCaBundle(`${at}.tls.caFile`, w.tls.caFile, read));
      const cert = take(w.tls.certFile === undefined ? undefined : readCertificate(`${at}.tls.certFile`, w.tls.certFile, read));
      const key = take(w.tls.keyFile === undefined ? undefined : readKey(`${at}.tls.keyFile`, w.tls.keyFile, read));
      if (cert !== undefined && key !== undefined) take(E.map(() => cert)(keyPair(`${at}.tls.certFile`, `${at}.tls.keyFile`, cert, key)));
      tls = {
        ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}),
        ...(w.tls.serverName !== undefined ? { servername: w.tls.serverName } : {}),
      };
    }
    let oauth2: WebhookFiles['oauth2'];
    const o = w.auth?.oauth2;
    if (o !== undefined) {
      const ca = take(o.caFile === undefined ? undefined : readCaBundle(`${at}.auth.oauth2.caFile`, o.caFile, read));
      let secret = o.clientSecret;
      if (o.clientSecretFile !== undefined) {
        // a secret, not PEM: read as it is, surrounding whitespace (a final newline) trimmed
        try {
          secret = read(o.clientSecretFile).toString('utf8').trim();
          if (secret === '') errors.push(`${at}.auth.oauth2.clientSecretFile: ${o.clientSecretFile} is empty`);
        } catch (err) {
          errors.push(`${at}.auth.oauth2.clientSecretFile: cannot read ${o.clientSecretFile}: ${fileProblem(err)}`);
        }
      }
      oauth2 = { clientSecret: secret ?? '', ...(ca !== undefined ? { ca } : {}) };
    }
    return { ...(tls !== undefined ? { tls } : {}), ...(oauth2 !== undefined ? { oauth2 } : {}) };
  });
  return errors.length > 0 ? E.left(errors) : E.right(files);
};
