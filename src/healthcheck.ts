import * as E from 'fp-ts/Either';
import { existsSync, readFileSync } from 'node:fs';
import { get } from 'node:http';
import { get as httpsGet } from 'node:https';
import { readStartupParameters } from './config/appsettings';
import { collectRaw, PARAMETERS } from './config/startup';
import type { AddressRecord } from './runtime/addressFile';

/**
 * `rest-connector healthcheck` (the image's HEALTHCHECK): probes `/health/live` at the address the
 * running connector actually listens on, whatever its `hostUrls` say. A connector started with
 * `Http:AddressFile` records there, once it listens, its process ID and where a local client
 * reaches its first listener; the check reads that file. This file loads nothing of the connector
 * but the startup parameters' reader: the check runs every few seconds, in a fresh process.
 *
 * Exit status: 0 healthy; 1 unhealthy (no record, a record of a process that is gone, no answer
 * or not 200 within the timeout), with the reason on stderr; 2 usage (no address file set).
 */

/** Whether the process that wrote the record still runs (EPERM: it runs, as another user). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const live = (url: string, timeoutMs: number): Promise<string | undefined> =>
  new Promise((resolve) => {
    // an https listener is this machine's own connector: its liveness is asked, not its identity checked
    const ask = url.startsWith('https:')
      ? (u: string, o: object, cb: (res: import('node:http').IncomingMessage) => void) => httpsGet(u, { ...o, rejectUnauthorized: false }, cb)
      : get;
    const req = ask(`${url}/health/live`, { timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? undefined : `${url}/health/live answered ${res.statusCode}`);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve(`${url}/health/live: ${err.message}`));
  });

export const healthcheck = async (file: string | undefined, timeoutMs = 2000): Promise<{ code: number; message: string }> => {
  if (file === undefined || file.trim() === '') return { code: 2, message: 'Http:AddressFile is not set: the connector records no address to check' };
  let record: AddressRecord;
  try {
    record = JSON.parse(readFileSync(file, 'utf8')) as AddressRecord;
    if (!Number.isInteger(record.pid) || !Array.isArray(record.urls) || record.urls.length === 0) throw new Error('not an address record');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT' || !existsSync(file);
    return {
      code: 1,
      message: missing
        ? `no address recorded at ${file}: the connector is not listening yet, or cannot write there`
        : `${file}: ${(err as Error).message}`,
    };
  }
  if (!alive(record.pid)) return { code: 1, message: `the ${record.kind} connector that recorded ${file} (process ${record.pid}) is gone` };
  const failures: string[] = [];
  for (const url of record.urls) {
    const failure = await live(url, timeoutMs);
    if (failure === undefined) return { code: 0, message: `${record.kind} connector live at ${url}` };
    failures.push(failure);
  }
  return { code: 1, message: failures.join('; ') };
};

/** The address file's path from the startup parameters (`appsettings.json`, then the environment). */
export const addressFileSetting = (env: NodeJS.ProcessEnv = process.env): string | undefined =>
  // a file that cannot be read or is not JSON: the environment alone (the connector itself reports a bad file)
  E.getOrElse(() => collectRaw({}, env))(readStartupParameters(env)).get(PARAMETERS.http.addressFile.toLowerCase());

if (require.main === module) {
  void healthcheck(addressFileSetting()).then(({ code, message }) => {
    (code === 0 ? process.stdout : process.stderr).write(`${message}\n`);
    process.exit(code);
  });
}
