import { existsSync, readFileSync } from 'node:fs';
import * as E from 'fp-ts/Either';
import { collectRaw, type RawParameters } from './startup';

/** Where a process looks for its startup parameters' file: the working directory. */
export const APPSETTINGS_FILE = 'appsettings.json';

export interface AppSettingsFiles {
  readonly exists: (path: string) => boolean;
  readonly read: (path: string) => string;
}

const disk: AppSettingsFiles = { exists: existsSync, read: (p) => readFileSync(p, 'utf8') };

/**
 * The startup parameters as given (CONTRACT 1): `appsettings.json` (optional) overridden by the
 * environment. The one reader of that file, for the CLI and for the image's healthcheck; a file that
 * is there but not JSON is an error naming it.
 */
export const readStartupParameters = (env: Readonly<Record<string, string | undefined>>, files: AppSettingsFiles = disk): E.Either<string, RawParameters> => {
  if (!files.exists(APPSETTINGS_FILE)) return E.right(collectRaw({}, env));
  try {
    return E.right(collectRaw(JSON.parse(files.read(APPSETTINGS_FILE)) as unknown, env));
  } catch (err) {
    return E.left(`${APPSETTINGS_FILE}: not valid JSON: ${(err as Error).message}`);
  }
};
