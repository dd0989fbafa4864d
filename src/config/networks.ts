import * as E from 'fp-ts/Either';
import { isIPv4, isIPv6 } from 'node:net';

/**
 * Where the outbound connector may connect (CONTRACT 6.7): `Webhooks:AllowedNetworks`, CIDRs or
 * addresses, IPv4 or IPv6. Empty: every address but the blocked ranges; set: only addresses within
 * a listed network (a blocked address too, when a listed network holds it). The rule is plain data
 * (the entries' texts), so that it goes to the interrogation thread as it is.
 *
 * Invariants (each has a row in test/network.guard.test.ts):
 *  1. An IPv6 address that carries an IPv4 address (mapped, compatible, NAT64, 6to4) is judged as
 *     that IPv4 address, against the blocked ranges and the list alike.
 *  2. An IPv4 address is contained only in IPv4 entries, an IPv6 address only in IPv6 entries:
 *     `::/0` is every IPv6 address, never `169.254.169.254`.
 *  3. An entry is a CIDR or an address, nothing else: an empty entry is not one.
 *
 * Node's `BlockList` is not used: it matches IPv4 addresses against IPv6 subnets as mapped
 * addresses, which breaks invariant 2.
 */

/** Cloud metadata services, link-local, "this network", the unspecified address, multicast. */
export const BLOCKED_NETWORKS: readonly string[] = [
  '169.254.0.0/16', 'fe80::/10', '0.0.0.0/8', '::/128', '224.0.0.0/4', 'ff00::/8', '100.100.100.200/32', 'fd00:ec2::254/128',
];

/** An address as its family and its bits (IPv4: 32, IPv6: 128). */
interface Address { readonly v6: boolean; readonly bits: bigint }
interface Network extends Address { readonly prefix: number }

const ipv4Bits = (text: string): bigint =>
  text.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);

/** The 128 bits of a valid IPv6 text (node's `isIPv6` has checked it), a zone index dropped. */
const ipv6Bits = (text: string): bigint => {
  const plain = text.split('%')[0]!;
  const [head = '', tail] = plain.split('::') as [string, string | undefined];
  const groups = (part: string): bigint[] => {
    if (part === '') return [];
    return part.split(':').flatMap((g) => {
      if (!g.includes('.')) return [BigInt(parseInt(g, 16))];
      const v4 = ipv4Bits(g);
      return [v4 >> 16n, v4 & 0xffffn];
    });
  };
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...Array<bigint>(8 - front.length - back.length).fill(0n), ...back];
  return all.reduce((acc, g) => (acc << 16n) | g, 0n);
};

/** The text as an address, or undefined when it is none (a name). Brackets of a URL host dropped. */
const addressOf = (text: string): Address | undefined => {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(t)) return { v6: false, bits: ipv4Bits(t) };
  if (isIPv6(t)) return { v6: true, bits: ipv6Bits(t) };
  return undefined;
};

const LOW32 = 0xffffffffn;
/** `bits` within `network`/`prefix` (both IPv6 here). */
const within6 = (bits: bigint, network: bigint, prefix: number): boolean => bits >> BigInt(128 - prefix) === network >> BigInt(128 - prefix);
const p6 = (text: string): bigint => ipv6Bits(text);
const MAPPED = p6('::ffff:0:0');
const NAT64 = p6('64:ff9b::');
const NAT64_LOCAL = p6('64:ff9b:1::');
const SIX_TO_FOUR = p6('2002::');

/** The IPv4 address an IPv6 address carries (CONTRACT 6.7), or undefined. */
export const carriedIpv4 = (bits: bigint): bigint | undefined => {
  if (within6(bits, MAPPED, 96) || within6(bits, NAT64, 96)) return bits & LOW32;
  // IPv4-compatible ::/96, but the unspecified address and loopback
  if (within6(bits, 0n, 96)) return bits > 1n ? bits : undefined;
  // RFC 6052 for a /48 prefix: 16 bits of the IPv4 address in bits 48–63, octet u (bits 64–71), 16 in 72–87
  if (within6(bits, NAT64_LOCAL, 48)) return (((bits >> 64n) & 0xffffn) << 16n) | ((bits >> 40n) & 0xffffn);
  // 6to4: the IPv4 address in bits 16–47
  if (within6(bits, SIX_TO_FOUR, 16)) return (bits >> 80n) & LOW32;
  return undefined;
};

/** The address as it is judged: an IPv6 address carrying an IPv4 address is that IPv4 address. */
const judged = (a: Address): Address => {
  if (!a.v6) return a;
  const v4 = carriedIpv4(a.bits);
  return v4 === undefined ? a : { v6: false, bits: v4 };
};

/** One entry as a network: `a.b.c.d/n`, `x::y/n`, or an address alone (all its bits). */
const networkOf = (entry: string): Network | undefined => {
  const [text = '', prefix, ...rest] = entry.split('/');
  if (rest.length > 0 || text.startsWith('[')) return undefined;
  const a = addressOf(text);
  if (a === undefined) return undefined;
  const size = a.v6 ? 128 : 32;
  if (prefix === undefined) return { ...a, prefix: size };
  const n = /^[0-9]{1,3}$/.test(prefix) ? Number(prefix) : NaN;
  return n <= size ? { ...a, prefix: n } : undefined;
};

const contains = (n: Network, a: Address): boolean => {
  if (n.v6 !== a.v6) return false;
  const shift = BigInt((n.v6 ? 128 : 32) - n.prefix);
  return a.bits >> shift === n.bits >> shift;
};

/** The entries of the parameter, or the first that is neither a CIDR nor an address ('' for an empty one). */
export const parseNetworks = (text: string): E.Either<string, readonly string[]> => {
  if (text === '') return E.right([]);
  const entries = text.split(',').map((e) => e.trim());
  const bad = entries.find((e) => networkOf(e) === undefined);
  return bad === undefined ? E.right(entries) : E.left(bad);
};

const listOf = (entries: readonly string[]): readonly Network[] => entries.flatMap((e) => networkOf(e) ?? []);
const BLOCKED = listOf(BLOCKED_NETWORKS);
/** The allowed lists made so far, by their entries (one per configuration, whatever thread). */
const lists = new Map<string, readonly Network[]>();

export type Refusal = 'not in Webhooks:AllowedNetworks' | 'blocked address';

/** Why the rule refuses a connection to `address` (an IP address), or undefined when it may be made. */
export const refusalOf = (allowed: readonly string[], address: string): Refusal | undefined => {
  const parsed = addressOf(address);
  // not an address: nothing to check here (a name is checked on what it resolves to)
  if (parsed === undefined) return undefined;
  const a = judged(parsed);
  if (allowed.length === 0) return BLOCKED.some((n) => contains(n, a)) ? 'blocked address' : undefined;
  const key = allowed.join(',');
  let list = lists.get(key);
  if (list === undefined) lists.set(key, (list = listOf(allowed)));
  return list.some((n) => contains(n, a)) ? undefined : 'not in Webhooks:AllowedNetworks';
};
