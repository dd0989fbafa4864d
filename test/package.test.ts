import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { BIN_PATH, VERSION } from '../src/version';

/**
 * The installed command is the product: `package.json` `bin` must name a file the build produces,
 * the packed tarball must carry it, and `npm install -g` of that tarball must give a working
 * `rest-connector` (npm test has built dist/ already).
 */
const root = join(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string>; files: string[]; scripts: Record<string, string> };
const npm = (args: string[], cwd = root): string => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

it('bin names the built CLI, a node script, and the tests run that very file', () => {
  expect(join(root, pkg.bin['rest-connector']!)).toBe(BIN_PATH);
  expect(existsSync(BIN_PATH)).toBe(true);
  expect(readFileSync(BIN_PATH, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  expect(pkg.scripts.prepack).toBe('npm run build');
});

it('npm pack lists the bin file and only what runs', () => {
  const [packed] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'])) as Array<{ files: Array<{ path: string }> }>;
  const files = packed!.files.map((f) => f.path);
  expect(files).toContain(relative(root, BIN_PATH));
  // the operator page's scripts (CONTRACT 6.8): the installed command serves them
  expect(files).toEqual(expect.arrayContaining(['dist/ui/page.js', 'dist/ui/model.js']));
  expect(files).toContain('package.json');
  expect(files.filter((f) => /^(src|test|bench|dist\/test|dist\/bench)\//.test(f) || f.endsWith('.ts') || f.endsWith('.map'))).toEqual([]);
});

it('npm install -g of the packed tarball gives a rest-connector that prints its version', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-pack-'));
  try {
    npm(['pack', '--ignore-scripts', '--pack-destination', dir]);
    const tarball = readdirSync(dir).find((f) => /^rest-connectors-.*\.tgz$/.test(f));
    expect(tarball).toBeDefined();
    const prefix = join(dir, 'prefix');
    npm(['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(dir, tarball!)], dir);
    const installed = join(prefix, 'bin', 'rest-connector');
    expect(execFileSync(installed, ['--version'], { encoding: 'utf8' }).trim()).toBe(VERSION);
    expect(execFileSync(installed, ['--help'], { encoding: 'utf8' })).toMatch(/^rest-connector \d+\.\d+\.\d+\n/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120000);
