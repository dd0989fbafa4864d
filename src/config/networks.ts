import * as E from 'fp-ts/Either';
import { BlockList, isIP } from 'node:net';

/**
 * Where the outbound connector may connect (CONTRACT 6.7): `Webhooks:AllowedNetworks`, CIDRs or
 * addresses, IPv4 or IPv6. Empty: every address but the blocked ranges; set: only addresses within
 * a listed network (a blocked address too, when a listed network holds it). The rule is plain data
 * (the entries' texts), so that it goes to the interrogation thread as it is.
 */

/** Cloud metadata services, link-local, "this network", the unspecified address, multicast. */
export const BLOCKED_NETWORKS: readonly string[] = [
  '169.254.0.0/16', 'fe80::/10', '0.0.0.0/8', '::/128', '224.0.0.0/4', 'ff00::/8', '100.100.100.200/32', 'fd00:ec2::254/128',
];

type Family = 'ipv4' | 'ipv6';
const familyOf = (address: string): Family | undefined => (isIP(address) === 4 ? 'ipv4' : isIP(address) === 6 ? 'ipv6' : undefined);

/** One entry as a network: `a.b.c.d/n`, `x::y/n`, or an address alone (all its bits). */
const networkOf = (entry: string): { address: string; prefix: number; family: Family } | undefined => {
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = familyOf(address);
  if (family === undefined || rest.length > 0) return undefined;
  const bits = family === 'ipv4' ? 32 : 128;
  if (prefix === undefined) return { address, prefix: bits, family };
  const n = /^[0-9]{1,3}$/.test(prefix) ? Number(prefix) : NaN;
  return n >= 0 && n <= bits ? { address, prefix: n, family } : undefined;
};

/** The entries of the parameter, or the first that is neither a CIDR nor an address. */
export const parseNetworks = (text: string): E.Either<string, readonly string[]> => {
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const bad = entries.find((e) => networkOf(e) === undefined);
  return bad === undefined ? E.right(entries) : E.left(bad);
};

const listOf = (entries: readonly string[]): BlockList => {
  const list = new BlockList();
  for (const e of entries) {
    const n = networkOf(e);
    if (n !== undefined) list.addSubnet(n.address, n.prefix, n.family);
  }
  return list;
};
const BLOCKED = listOf(BLOCKED_NETWORKS);
/** The allowed lists made so far, by their entries (one per configuration, whatever thread). */
const lists = new Map<string, BlockList>();

/** `::ffff:a.b.c.d` (or its hex form) is the IPv4 address it carries: checked as that. */
const unmapped = (address: string): string => {
  const m = /^::ffff:(?:([0-9.]+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (m === null) return address;
  if (m[1] !== undefined) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
};

export type Refusal = 'not in Webhooks:AllowedNetworks' | 'blocked address';

/** Why the rule refuses a connection to `address` (an IP address), or undefined when it may be made. */
export const refusalOf = (allowed: readonly string[], address: string): Refusal | undefined => {
  const a = unmapped(address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address);
  const family = familyOf(a);
  // not an address: nothing to check here (a name is checked on what it resolves to)
  if (family === undefined) return undefined;
  if (allowed.length === 0) return BLOCKED.check(a, family) ? 'blocked address' : undefined;
  const key = allowed.join(',');
  let list = lists.get(key);
  if (list === undefined) lists.set(key, (list = listOf(allowed)));
  return list.check(a, family) ? undefined : 'not in Webhooks:AllowedNetworks';
};
