import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import * as E from 'fp-ts/Either';
import type { Webhook } from './managed';
import { fileProblem } from './fileProblem';

/**
 * The files a webhook's settings name (CONTRACT 4.5): its TLS CA bundle, client certificate and
 * key, its OAuth 2.0 token endpoint's CA and client secret — read once, at start, and checked
 * (PEM that parses, a key that matches its certificate, a secret that is not empty). Every
 * problem names its field; a file's contents never appear in a message.
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

export type ReadFile = (path: string) => Buffer;


export const loadWebhookFiles = (webhooks: readonly Webhook[], read: ReadFile = (p) => readFileSync(p)): E.Either<string[], WebhookFiles[]> => {
  const errors: string[] = [];
  const files = webhooks.map((w, i): WebhookFiles => {
    const at = `webhooks[${i}]`;
    const file = (field: string, path: string | undefined): Buffer | undefined => {
      if (path === undefined) return undefined;
      try {
        return read(path);
      } catch (err) {
        errors.push(`${at}.${field}: cannot read ${path}: ${fileProblem(err)}`);
        return undefined;
      }
    };
    const checkCa = (field: string, ca: Buffer | undefined) => {
      if (ca === undefined) return;
      try {
        createSecureContext({ ca });
        if (!ca.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate in it');
      } catch (err) {
        errors.push(`${at}.${field}: not a PEM certificate bundle: ${fileProblem(err)}`);
      }
    };
    let tls: WebhookTlsMaterial | undefined;
    if (w.tls !== undefined) {
      const ca = file('tls.caFile', w.tls.caFile);
      const cert = file('tls.certFile', w.tls.certFile);
      const key = file('tls.keyFile', w.tls.keyFile);
      checkCa('tls.caFile', ca);
      if (cert !== undefined && key !== undefined) {
        try {
          createSecureContext({ cert, key });
        } catch (err) {
          errors.push(`${at}.tls.certFile: certificate and tls.keyFile do not load as a pair: ${fileProblem(err)}`);
        }
      }
      tls = {
        ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}),
        ...(w.tls.serverName !== undefined ? { servername: w.tls.serverName } : {}),
      };
    }
    let oauth2: WebhookFiles['oauth2'];
    const o = w.auth?.oauth2;
    if (o !== undefined) {
      const ca = file('auth.oauth2.caFile', o.caFile);
      checkCa('auth.oauth2.caFile', ca);
      let secret = o.clientSecret;
      if (o.clientSecretFile !== undefined) {
        const raw = file('auth.oauth2.clientSecretFile', o.clientSecretFile);
        secret = raw?.toString('utf8').trim();
        if (raw !== undefined && secret === '') errors.push(`${at}.auth.oauth2.clientSecretFile: ${o.clientSecretFile} is empty`);
      }
      oauth2 = { clientSecret: secret ?? '', ...(ca !== undefined ? { ca } : {}) };
    }
    return { ...(tls !== undefined ? { tls } : {}), ...(oauth2 !== undefined ? { oauth2 } : {}) };
  });
  return errors.length > 0 ? E.left(errors) : E.right(files);
};
