import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface PackageJson {
  readonly version: string;
  readonly bin?: string | Record<string, string>;
}

/** package.json and its folder, found upwards from here (src/ or dist/src/, installed or not). */
const findPackage = (): { root: string; pkg: PackageJson } => {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return { root: dir, pkg: JSON.parse(readFileSync(file, 'utf8')) as PackageJson };
  }
  return { root: __dirname, pkg: { version: '0.0.0' } };
};

const found = findPackage();

/** package.json is the one source of the version. */
export const VERSION: string = found.pkg.version;

/**
 * The file `package.json` `bin` names for `rest-connector`, as an absolute path: what an install
 * puts on PATH. The demo, the benchmarks and every process-level test run the CLI through it, so a
 * `bin` that names a file the build does not produce fails them all.
 */
export const BIN_PATH: string = join(
  found.root,
  typeof found.pkg.bin === 'string' ? found.pkg.bin : found.pkg.bin?.['rest-connector'] ?? 'bin-not-declared',
);

/** The `User-Agent` of every request to a webhook (CONTRACT 4.2). */
export const USER_AGENT = `rest-connectors/${VERSION}`;
