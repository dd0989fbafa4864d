import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

/**
 * The record a running connector keeps in `Http:AddressFile` for `rest-connector healthcheck`
 * (src/healthcheck.ts): its process ID and where a local client reaches its first listener.
 */
export interface AddressRecord {
  readonly pid: number;
  readonly kind: string;
  /** Where a client on this machine (or in this container) reaches the listener, in order. */
  readonly urls: readonly string[];
}

/** How a local client reaches a listener bound to this address: the loopback for a wildcard. */
export const localUrls = (a: AddressInfo, https = false): string[] => {
  const s = https ? 'https' : 'http';
  if (a.address === '0.0.0.0') return [`${s}://127.0.0.1:${a.port}`];
  if (a.address === '::') return [`${s}://127.0.0.1:${a.port}`, `${s}://[::1]:${a.port}`];
  return [a.family === 'IPv6' ? `${s}://[${a.address}]:${a.port}` : `${s}://${a.address}:${a.port}`];
};

/** Written whole or not at all (a temporary file renamed over it): the check never reads half a record. */
export const writeAddressFile = (path: string, record: AddressRecord): void => {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record)}\n`);
  renameSync(tmp, path);
};

/** Removed on a graceful stop, if it is still this process's record. */
export const removeAddressFile = (path: string, pid: number): void => {
  try {
    if ((JSON.parse(readFileSync(path, 'utf8')) as AddressRecord).pid === pid) unlinkSync(path);
  } catch {
    /* gone already, or another's */
  }
};
