import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, type AgentOptions } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { refusalOf, type Refusal } from '../../config/networks';

/**
 * The one place outbound connections are made (CONTRACT 6.7): keep-alive agents for a webhook's
 * requests and its token requests, checking the address of every connection against
 * `Webhooks:AllowedNetworks` and the blocked ranges — a name on what it resolves to at that
 * connection, a literal address as it is — so a name that later resolves elsewhere is caught.
 */
export class NetworkRefused extends Error {
  readonly code = 'ENETWORKREFUSED';
  /** `where`: what the connection was for, when not the webhook itself (its token endpoint). */
  constructor(readonly address: string, readonly why: Refusal, readonly where?: string) {
    super(`${where !== undefined ? `${where}: ` : ''}connection to ${address} refused: ${why}`);
    this.name = 'NetworkRefused';
  }
}

/** Is this (an error of a request) a connection the rule refused? */
export const refusedByRule = (err: unknown): NetworkRefused | undefined => {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = (e as Error & { cause?: unknown }).cause, depth++) {
    if (e instanceof NetworkRefused) return e;
  }
  return undefined;
};

type Lookup = (hostname: string, options: { all?: boolean; family?: number }, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => void;

/** `lookup` that refuses when any address a name resolves to is refused (the first such named). */
export const guardedLookup = (allowed: readonly string[], resolve: Lookup = dnsLookup as unknown as Lookup): LookupFunction =>
  ((hostname: string, options: { all?: boolean; family?: number }, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname, options, (err, address, family) => {
      if (err !== null) return callback(err, address, family);
      const all = Array.isArray(address) ? address : [{ address, family: family ?? 4 }];
      for (const a of all) {
        const why = refusalOf(allowed, a.address);
        if (why !== undefined) return callback(new NetworkRefused(a.address, why), address, family);
      }
      callback(null, address, family);
    });
  }) as unknown as LookupFunction;

/** An agent whose connections are checked first: a literal address here, a name by `lookup`. */
const guard = <A extends HttpAgent>(agent: A, allowed: readonly string[]): A => {
  const create = agent.createConnection.bind(agent) as (options: { host?: string }, cb: (err: Error | null, socket?: unknown) => void) => unknown;
  (agent as unknown as { createConnection: typeof create }).createConnection = (options, cb) => {
    const host = options.host ?? '';
    const why = isIP(host) !== 0 ? refusalOf(allowed, host) : undefined;
    if (why === undefined) return create(options, cb);
    process.nextTick(cb, new NetworkRefused(host, why));
    return undefined;
  };
  return agent;
};

export interface Agents {
  readonly httpAgent: HttpAgent;
  readonly httpsAgent: HttpsAgent;
  close(): void;
}

/**
 * A client's keep-alive agents: `http` and `https` their own options (the https one's TLS
 * settings); `resolve` the name resolution (tests pass their own).
 */
export const guardedAgents = (allowed: readonly string[], options: { http?: AgentOptions; https?: HttpsAgentOptions } = {}, resolve?: Lookup): Agents => {
  const lookup = guardedLookup(allowed, resolve);
  const httpAgent = guard(new HttpAgent({ keepAlive: true, ...options.http, lookup }), allowed);
  const httpsAgent = guard(new HttpsAgent({ keepAlive: true, ...options.https, lookup }), allowed);
  return {
    httpAgent,
    httpsAgent,
    close: () => {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
};
