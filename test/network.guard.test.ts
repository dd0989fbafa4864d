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
    expect(parseNetworks(' 10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1')).toEqual(E.right(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1']));
    expect(parseNetworks('')).toEqual(E.right([]));
    for (const bad of ['10.0.0.0/33', '10.0.0/8', 'fd00::/129', 'example.com', '10.0.0.0/8/1', '10.0.0.0/x', '1.2.3.4/', '[::1]/128', '1.2.3.4/-1', '::1/1280', '10.0.0.0/1e1', '10.0.0.0/0x8', '10.0.0.0/ 8']) {
      expect([bad, parseNetworks(`10.0.0.0/8,${bad}`)]).toEqual([bad, E.left(bad)]);
    }
    const startup = loadStartupSettings(collectRaw({}, { Id: 'x', Webhooks__AllowedNetworks: '10.0.0.0/8,nope' }), { requireId: true, hostname: 'h' });
    expect(startup).toEqual(E.left(["Webhooks:AllowedNetworks: 'nope' is neither a CIDR nor an address"]));
    // invariant 3: an empty entry is no CIDR — a templated list whose values are all unset opens nothing
    for (const empty of [',', ' ', ' , ', '10.0.0.0/8,', ',10.0.0.0/8', '10.0.0.0/8,,fd00::/8']) {
      expect([empty, parseNetworks(empty)]).toEqual([empty, E.left('')]);
      const s = loadStartupSettings(collectRaw({}, { Id: 'x', Webhooks__AllowedNetworks: empty }), { requireId: true, hostname: 'h' });
      expect(s).toEqual(E.left([`Webhooks:AllowedNetworks: an empty entry is not a CIDR (got '${empty}'; leave the parameter unset for the default rule)`]));
    }
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
    // a name is no address: it is checked on what it resolves to; brackets only around a whole address
    expect(refusalOf([], 'metadata.internal')).toBeUndefined();
    for (const name of ['[169.254.169.254x', 'x169.254.169.254]', '[169.254.169.254', '169.254.169.254]']) expect([name, refusalOf([], name)]).toEqual([name, undefined]);
    expect(BLOCKED_NETWORKS).toHaveLength(8);
  });

  // invariant 1: an IPv6 address that carries an IPv4 address is judged as that IPv4 address
  it.each([
    // [address, the IPv4 address it carries]
    ['::ffff:169.254.169.254', '169.254.169.254'], ['::ffff:a9fe:a9fe', '169.254.169.254'], ['0:0:0:0:0:ffff:a9fe:a9fe', '169.254.169.254'],
    ['::a9fe:a9fe', '169.254.169.254'], ['::169.254.169.254', '169.254.169.254'], ['::2', '0.0.0.2'],
    ['64:ff9b::a9fe:a9fe', '169.254.169.254'], ['64:ff9b::169.254.169.254', '169.254.169.254'], ['64:ff9b::a64:102', '10.100.1.2'],
    ['64:ff9b:1:a9fe:00:a9fe::', '169.254.169.254'], ['64:ff9b:1:a64:1:102:ffff:ffff', '10.100.1.2'],
    ['2002:a9fe:a9fe::', '169.254.169.254'], ['2002:a9fe:a9fe:1::7', '169.254.169.254'], ['2002:a64:102::1', '10.100.1.2'], ['2002::', '0.0.0.0'],
    ['[64:ff9b::a9fe:a9fe]', '169.254.169.254'], ['64:FF9B::A9FE:A9FE', '169.254.169.254'],
  ])('%s is judged as %s', (address, v4) => {
    for (const rule of [[], ['10.0.0.0/8'], ['169.254.0.0/16'], ['::/0'], ['0.0.0.0/0'], ['2002::/16', '64:ff9b::/96', '::ffff:0:0/96']]) {
      expect([address, rule, refusalOf(rule, address)]).toEqual([address, rule, refusalOf(rule, v4)]);
    }
  });

  it.each([
    // invariant 1's exceptions and neighbours: IPv6 addresses that carry nothing stay IPv6
    ['::1', undefined], ['::', 'blocked address'], ['64:ff9b:2::a9fe:a9fe', undefined], ['2003:a9fe:a9fe::', undefined],
    ['::fffe:a9fe:a9fe', undefined], ['1::a9fe:a9fe', undefined], ['64:ff9a::a9fe:a9fe', undefined], ['fe80::1%eth0', 'blocked address'],
  ])('%s stays an IPv6 address (empty list: %s)', (address, refusal) => {
    expect(refusalOf([], address)).toBe(refusal);
    expect(refusalOf(['::/0'], address)).toBeUndefined();
    expect(refusalOf(['0.0.0.0/0'], address)).toBe('not in Webhooks:AllowedNetworks');
  });

  // invariant 2: an IPv4 address is contained only in IPv4 entries, an IPv6 address only in IPv6 ones
  it.each([
    [['::/0'], '169.254.169.254', 'not in Webhooks:AllowedNetworks'], [['::/1'], '10.0.0.1', 'not in Webhooks:AllowedNetworks'],
    [['::/80'], '127.0.0.1', 'not in Webhooks:AllowedNetworks'], [['::ffff:0:0/96'], '10.0.0.1', 'not in Webhooks:AllowedNetworks'],
    [['::/0'], '2001:db8::1', undefined], [['0.0.0.0/0'], '2001:db8::1', 'not in Webhooks:AllowedNetworks'],
    [['0.0.0.0/0'], '169.254.169.254', undefined], [['10.0.0.0/8'], '::ffff:10.1.2.3', undefined], [['10.0.0.0/8'], '2002:a01:203::', undefined],
    [['10.0.0.0/8'], '11.0.0.0', 'not in Webhooks:AllowedNetworks'], [['10.0.0.0/8'], '9.255.255.255', 'not in Webhooks:AllowedNetworks'],
    [['10.0.0.0/8'], '10.255.255.255', undefined], [['2001:db8::/32'], '2001:db8:ffff::1', undefined], [['2001:db8::/32'], '2001:db9::', 'not in Webhooks:AllowedNetworks'],
    [['10.1.2.3'], '10.1.2.3', undefined], [['10.1.2.3'], '10.1.2.4', 'not in Webhooks:AllowedNetworks'], [['2001:db8::1'], '2001:db8::1', undefined],
    [['2001:db8::1'], '2001:db8::2', 'not in Webhooks:AllowedNetworks'], [['10.0.0.0/0'], '200.1.1.1', undefined],
  ])('list %j: %s is %s', (rule, address, refusal) => {
    expect(refusalOf(rule, address)).toBe(refusal);
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
