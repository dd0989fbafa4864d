import axios from 'axios';
import * as E from 'fp-ts/Either';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BLOCKED_NETWORKS, parseNetworks, refusalOf } from '../src/config/networks';
import { collectRaw, loadStartupSettings } from '../src/config/startup';
import { literalAddressProblems, webhookWithDefaults } from '../src/config/webhookSettings';
import { classifyError } from '../src/streams/webhook/answers';
import { guardedAgents, NetworkRefused, refusedByRule } from '../src/streams/webhook/agents';

/**
 * CONTRACT 6.7: where the outbound connector may connect, checked on the address of every
 * connection. Receivers on 127.0.0.2 (Linux routes 127/8 to loopback) and 127.0.0.1; a resolver of
 * the test's own for a name whose address changes between two connections.
 */
describe('Webhooks:AllowedNetworks and the blocked ranges', () => {
  it('parses CIDRs and addresses, IPv4 and IPv6; an entry that is neither is named', () => {
    expect(parseNetworks(' 10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1,')).toEqual(E.right(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1']));
    expect(parseNetworks('')).toEqual(E.right([]));
    for (const bad of ['10.0.0.0/33', '10.0.0/8', 'fd00::/129', 'example.com', '10.0.0.0/8/1', '10.0.0.0/x', '1.2.3.4/']) {
      expect([bad, parseNetworks(`10.0.0.0/8,${bad}`)]).toEqual([bad, E.left(bad)]);
    }
    const startup = loadStartupSettings(collectRaw({}, { Id: 'x', Webhooks__AllowedNetworks: '10.0.0.0/8,nope' }), { requireId: true, hostname: 'h' });
    expect(startup).toEqual(E.left(["Webhooks:AllowedNetworks: 'nope' is neither a CIDR nor an address"]));
    const ok = loadStartupSettings(collectRaw({}, { Id: 'x' }), { requireId: true, hostname: 'h' });
    expect(E.isRight(ok) && ok.right.webhooks.allowedNetworks).toEqual([]);
  });

  it('empty: every address but the blocked ones; set: only the listed networks, a blocked one too when listed', () => {
    const blocked = ['169.254.169.254', '169.254.0.1', 'fe80::1', '0.0.0.0', '0.1.2.3', '::', '224.0.0.1', '239.255.255.250', 'ff02::1', '100.100.100.200', 'fd00:ec2::254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '[fe80::1]'];
    for (const a of blocked) expect([a, refusalOf([], a)]).toEqual([a, 'blocked address']);
    for (const a of ['127.0.0.1', '10.1.2.3', '100.100.100.201', '::1', 'fd00:ec2::253', '8.8.8.8', '::ffff:10.0.0.1']) expect([a, refusalOf([], a)]).toEqual([a, undefined]);
    const allowed = ['127.0.0.2/32', '10.0.0.0/8', 'fd00::/8', '169.254.169.254'];
    expect(['127.0.0.2', '10.200.0.1', 'fd12::1', '169.254.169.254', '::ffff:10.0.0.1'].map((a) => refusalOf(allowed, a))).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(['127.0.0.1', '11.0.0.1', 'fe80::1', '169.254.169.253', '::1'].map((a) => refusalOf(allowed, a))).toEqual(Array(5).fill('not in Webhooks:AllowedNetworks'));
    // a name is no address: it is checked on what it resolves to
    expect(refusalOf([], 'metadata.internal')).toBeUndefined();
    expect(BLOCKED_NETWORKS).toHaveLength(8);
  });

  it('a webhook url or token URL whose host is a literal address the rule refuses is a config error naming the field', () => {
    const w = (url: string, tokenUrl?: string) => webhookWithDefaults({ url, ...(tokenUrl !== undefined ? { auth: { oauth2: { tokenUrl, clientId: 'c', clientSecret: 's' } } } : {}) });
    expect(literalAddressProblems([w('http://169.254.169.254/latest'), w('http://10.0.0.1/x', 'https://[fe80::1]:8443/token'), w('http://metadata.internal/')], [])).toEqual([
      'webhooks[0].url: the connector may not connect to 169.254.169.254 (blocked address)',
      'webhooks[1].auth.oauth2.tokenUrl: the connector may not connect to [fe80::1] (blocked address)',
    ]);
    expect(literalAddressProblems([w('http://127.0.0.1:9/x'), w('http://127.0.0.2:9/x')], ['127.0.0.2/32'])).toEqual([
      'webhooks[0].url: the connector may not connect to 127.0.0.1 (not in Webhooks:AllowedNetworks)',
    ]);
  });
});

describe('every connection checked on its address (real receivers)', () => {
  const servers: Server[] = [];
  const listen = async (host: string): Promise<number> => {
    const s = createServer((_req, res) => res.end('ok'));
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, host, r));
    return (s.address() as AddressInfo).port;
  };
  afterAll(() => servers.forEach((s) => s.close()));

  /** A GET through guarded agents: its status, or the refusal. */
  const get = async (url: string, agents: ReturnType<typeof guardedAgents>) => {
    try {
      const r = await axios.get(url, { httpAgent: agents.httpAgent, httpsAgent: agents.httpsAgent, proxy: false, timeout: 5000 });
      return r.status;
    } catch (err) {
      const refused = refusedByRule(err);
      if (refused === undefined) throw err;
      return `${refused.address}: ${refused.why}`;
    }
  };

  it('127.0.0.2 allowed, 127.0.0.1 refused; a name (localhost) checked on the address it resolves to', async () => {
    const [two, one] = [await listen('127.0.0.2'), await listen('127.0.0.1')];
    const agents = guardedAgents(['127.0.0.2/32']);
    expect(await get(`http://127.0.0.2:${two}/`, agents)).toBe(200);
    expect(await get(`http://127.0.0.1:${one}/`, agents)).toBe('127.0.0.1: not in Webhooks:AllowedNetworks');
    expect(await get(`http://localhost:${one}/`, agents)).toBe('127.0.0.1: not in Webhooks:AllowedNetworks');
    // without a list, loopback is allowed and only the blocked ranges are not
    const open = guardedAgents([]);
    expect(await get(`http://localhost:${one}/`, open)).toBe(200);
    agents.close();
    open.close();
  });

  it('a name whose resolution changes between two connections is refused on the second', async () => {
    const [two, one] = [await listen('127.0.0.2'), await listen('127.0.0.1')];
    let answer = '127.0.0.2';
    const resolve = (_host: string, options: { all?: boolean }, cb: (err: Error | null, address: string | Array<{ address: string; family: number }>, family?: number) => void) =>
      options.all === true ? cb(null, [{ address: answer, family: 4 }]) : cb(null, answer, 4);
    // no keep-alive: every request is a new connection, resolved again
    const agents = guardedAgents(['127.0.0.2/32'], { http: { keepAlive: false } }, resolve);
    expect(await get(`http://receiver.plant.test:${two}/`, agents)).toBe(200);
    answer = '127.0.0.1';
    expect(await get(`http://receiver.plant.test:${one}/`, agents)).toBe('127.0.0.1: not in Webhooks:AllowedNetworks');
    agents.close();
  });

  it('a name that resolves to several addresses is refused when one of them is, naming the first refused', async () => {
    const [two] = [await listen('127.0.0.2')];
    const several = (_host: string, options: { all?: boolean }, cb: (err: Error | null, address: string | Array<{ address: string; family: number }>, family?: number) => void) => {
      const all = [{ address: '127.0.0.2', family: 4 }, { address: '127.0.0.3', family: 4 }, { address: '127.0.0.4', family: 4 }];
      return options.all === true ? cb(null, all) : cb(null, all[0]!.address, 4);
    };
    const agents = guardedAgents(['127.0.0.2/32'], { http: { keepAlive: false } }, (h, o, cb) => several(h, { ...o, all: true }, cb));
    expect(await get(`http://receiver.plant.test:${two}/`, agents)).toBe('127.0.0.3: not in Webhooks:AllowedNetworks');
    agents.close();
  });

  it('a refusal is an attempt refused as a 4xx is: not retried', () => {
    expect(classifyError(new NetworkRefused('127.0.0.1', 'not in Webhooks:AllowedNetworks'))).toEqual({ ok: false, retryable: false, reason: 'connection to 127.0.0.1 refused: not in Webhooks:AllowedNetworks' });
    expect(classifyError(Object.assign(new Error('wrapped'), { cause: new NetworkRefused('::1', 'blocked address', 'token endpoint t:1') }))).toEqual({ ok: false, retryable: false, reason: 'wrapped' });
    expect(classifyError(new Error('network error ECONNREFUSED'))).toEqual({ ok: false, retryable: true, reason: 'network error ECONNREFUSED' });
  });
});
