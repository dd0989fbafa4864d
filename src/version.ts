import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** package.json is the one source of the version; found upwards from here (src/ or dist/src/). */
const findVersion = (): string => {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return '0.0.0';
};

export const VERSION: string = findVersion();
