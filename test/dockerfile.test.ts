import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * No Docker engine runs here: the Dockerfile is checked by review and by doing what it does —
 * the build stage's `npm run build` (npm test builds first) and the run stage's production-only
 * install, from which the entrypoint must start.
 */
const root = join(__dirname, '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

it('builds in two stages, runs as non-root with node directly, exposes 8080 and checks /health/live', () => {
  expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
  expect(dockerfile).toMatch(/RUN npm ci\nCOPY tsconfig.json tsconfig.build.json \.\/\nCOPY src \.\/src\nCOPY bench \.\/bench\nRUN npm run build/);
  expect(dockerfile).toMatch(/RUN npm ci --omit=dev/);
  expect(dockerfile).toMatch(/^USER node$/m);
  expect(dockerfile).toMatch(/^EXPOSE 8080$/m);
  expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/health\/live/m);
  expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "dist\/src\/cli\.js"\]$/m);
  expect(dockerfile).toMatch(/^CMD \["outbound"\]$/m);
  for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'bench', 'dist/src/cli.js']) {
    expect([path, existsSync(join(root, path))]).toEqual([path, true]);
  }
});

it('the entrypoint runs with production dependencies only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-image-'));
  for (const f of ['package.json', 'package-lock.json']) cpSync(join(root, f), join(dir, f));
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  execFileSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  expect(execFileSync(process.execPath, ['dist/src/cli.js', '--version'], { cwd: dir }).toString().trim()).toBe(pkg.version);
  expect(existsSync(join(dir, 'node_modules', 'typescript'))).toBe(false);
}, 120000);
