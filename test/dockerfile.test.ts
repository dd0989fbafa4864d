import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The Dockerfile checked without an engine — its shape, the build stage's compile of src/ alone
 * and the run stage's production-only install, from which the entrypoint and the healthcheck must
 * start. `npm run test:image` builds and runs the image itself where an engine is available.
 */
const root = join(__dirname, '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

it('builds in two stages from package files, tsconfig and src/ alone; runs dist/src as non-root with node directly; the healthcheck reads the address the connector records', () => {
  expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
  expect(dockerfile).toMatch(/RUN npm ci\nCOPY tsconfig.json tsconfig.build.json tsconfig.ui.json \.\/\nCOPY src \.\/src\nRUN npx tsc -p tsconfig.build.json && npx tsc -p tsconfig.ui.json\n/);
  expect(dockerfile).not.toMatch(/COPY (bench|chaos|test)/);
  expect(dockerfile).toMatch(/RUN npm ci --omit=dev/);
  expect(dockerfile).toMatch(/^COPY --from=build \/app\/dist\/src \.\/dist\/src$/m);
  // the operator page's scripts (CONTRACT 6.8)
  expect(dockerfile).toMatch(/^COPY --from=build \/app\/dist\/ui \.\/dist\/ui$/m);
  expect(dockerfile).toMatch(/Http__AddressFile=\/tmp\/rest-connector\.address/);
  expect(dockerfile).toMatch(/^USER node$/m);
  expect(dockerfile).toMatch(/^EXPOSE 8080$/m);
  expect(dockerfile).toMatch(/^HEALTHCHECK .*\n\s+CMD \["node", "dist\/src\/healthcheck\.js"\]$/m);
  expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "dist\/src\/cli\.js"\]$/m);
  expect(dockerfile).toMatch(/^CMD \["outbound"\]$/m);
  // the build context: what the Dockerfile copies, and not the demo
  const ignore = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  expect(ignore).toEqual(['*', '!package.json', '!package-lock.json', '!tsconfig.json', '!tsconfig.build.json', '!tsconfig.ui.json', '!src/', 'src/demo/']);
  for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.ui.json', 'src', 'dist/src/cli.js', 'dist/src/healthcheck.js', 'dist/ui/page.js', 'dist/ui/model.js']) {
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
  // the healthcheck loads with production dependencies too (no address file here: exit 2, saying so)
  const check = spawnSync(process.execPath, ['dist/src/healthcheck.js'], { cwd: dir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
  expect([check.status, check.stderr]).toEqual([2, 'Http:AddressFile is not set: the connector records no address to check\n']);
  expect(existsSync(join(dir, 'node_modules', 'typescript'))).toBe(false);
}, 120000);
