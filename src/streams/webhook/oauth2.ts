import axios, { type AxiosInstance } from 'axios';
import type { OAuth2Settings } from '../../config/webhookSettings';
import { urlHost } from '../../config/urls';
import { guardedAgents, NetworkRefused, refusedByRule } from './agents';

/**
 * A webhook's OAuth 2.0 client-credentials tokens (CONTRACT 4.5; RFC 6749 4.4): one token request
 * at a time, however many requests wait for it; a token kept until 30 s before its `expires_in`
 * (without one, until the webhook answers 401); `discard` drops the token a 401 came back for,
 * never a newer one. A failing token request rejects with a message naming the token endpoint's
 * `host:port` and what went wrong — never the secret or a token.
 */
export interface TokenSource {
  get(): Promise<string>;
  discard(token: string): void;
  close(): void;
}

/** RFC 6749 2.3.1: client id and secret form-encoded, then HTTP Basic. */
const formEncode = (s: string): string => new URLSearchParams({ x: s }).toString().slice(2);
export const basicCredentials = (id: string, secret: string): string => `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;

export const RENEW_BEFORE_MS = 30_000;

export const oauth2Tokens = (
  o: OAuth2Settings, secret: string, ca: Buffer | undefined, timeoutMs: number, now: () => number = Date.now, allowed: readonly string[] = [],
): TokenSource => {
  const where = `token endpoint ${urlHost(o.tokenUrl)}`;
  // CONTRACT 6.7: the token endpoint's connections are checked as the webhook's are
  const agents = guardedAgents(allowed, { https: ca !== undefined ? { ca } : {} });
  const client: AxiosInstance = axios.create({ timeout: timeoutMs, httpAgent: agents.httpAgent, httpsAgent: agents.httpsAgent, maxRedirects: 0, validateStatus: () => true, proxy: false });
  const form = new URLSearchParams({ grant_type: 'client_credentials', ...(o.scope !== undefined ? { scope: o.scope } : {}), ...(o.audience !== undefined ? { audience: o.audience } : {}) }).toString();
  let current: { token: string; renewAt: number } | undefined;
  let asking: Promise<string> | undefined;

  const ask = async (): Promise<string> => {
    let r;
    try {
      r = await client.post(o.tokenUrl, form, {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json', Authorization: basicCredentials(o.clientId, secret) },
        responseType: 'json',
      });
    } catch (err) {
      // refused by the network rule: the webhook's attempt is refused with it, not retried (CONTRACT 6.7)
      const refused = refusedByRule(err);
      if (refused !== undefined) throw new NetworkRefused(refused.address, refused.why, where);
      const code = (err as { code?: string }).code;
      throw new Error(`${where}: ${code === 'ECONNABORTED' ? 'timeout' : code !== undefined ? `network error ${code}` : 'request failed'}`);
    }
    if (r.status < 200 || r.status >= 300) throw new Error(`${where} answered HTTP ${r.status}`);
    const body = r.data as { access_token?: unknown; expires_in?: unknown } | undefined;
    const token = body?.access_token;
    if (typeof token !== 'string' || token === '') throw new Error(`${where} answered HTTP ${r.status} without an access_token`);
    const expiresIn = typeof body?.expires_in === 'number' ? body.expires_in : typeof body?.expires_in === 'string' ? Number(body.expires_in) : NaN;
    current = { token, renewAt: Number.isFinite(expiresIn) ? now() + expiresIn * 1000 - RENEW_BEFORE_MS : Infinity };
    return token;
  };

  return {
    get: () => {
      if (current !== undefined && now() < current.renewAt) return Promise.resolve(current.token);
      asking ??= ask().finally(() => (asking = undefined));
      return asking;
    },
    discard: (token) => {
      if (current?.token === token) current = undefined;
    },
    close: () => agents.close(),
  };
};
