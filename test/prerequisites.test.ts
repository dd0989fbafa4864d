import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingMessage, missingPrograms, PROGRAMS } from '../support/prerequisites';

/**
 * Issue 34: a machine without a program the tests or the demo start is told at once, in one message,
 * what to install — not hundreds of failures each saying `redis-server exited with -2`.
 */
const emptyDir = () => mkdtempSync(join(tmpdir(), 'rc-nopath-'));

it('a program is found on PATH only as an executable file; the message names each missing one, what needs it, and how to install it on Debian/Ubuntu and macOS', () => {
  const dir = emptyDir();
  writeFileSync(join(dir, 'openssl'), '#!/bin/sh\n');
  chmodSync(join(dir, 'openssl'), 0o755);
  writeFileSync(join(dir, 'promtool'), 'not executable');
  const missing = missingPrograms(PROGRAMS.map((p) => p.program), `${join(dir, 'nowhere')}:${dir}`);
  expect(missing.map((p) => p.program)).toEqual(['redis-server', 'redis-sentinel', 'promtool', 'influxd', 'victoria-metrics', 'chromium']);
  const text = missingMessage(missing);
  expect(text.split('\n')[0]).toBe('missing on PATH: redis-server, redis-sentinel, promtool, influxd, victoria-metrics, chromium');
  expect(text).toContain('sudo apt-get install redis-server redis-sentinel prometheus influxdb victoria-metrics chromium');
  expect(text).toContain('brew install redis prometheus influxdb@1 victoriametrics chromium');
  expect(missingPrograms(['redis-server'], process.env.PATH)).toEqual([]);
});

it('npm run demo without redis-server on PATH stops at once with that message', () => {
  const r = spawnSync(process.execPath, [join(__dirname, '..', 'dist', 'src', 'demo', 'demo.js')], { env: { PATH: emptyDir() }, encoding: 'utf8', timeout: 20000 });
  expect([r.status, r.stderr.split('\n')[0], r.stdout]).toEqual([1, 'missing on PATH: redis-server', '']);
  expect(r.stderr).toContain('sudo apt-get install redis-server');
});

it('npm test without them stops before any test runs, with that message', () => {
  const jest = join(__dirname, '..', 'node_modules', 'jest', 'bin', 'jest.js');
  const r = spawnSync(process.execPath, [jest, 'test/streamOrder.test.ts'], { cwd: join(__dirname, '..'), env: { PATH: emptyDir() }, encoding: 'utf8', timeout: 60000 });
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain('missing on PATH: redis-server, redis-sentinel, openssl, promtool');
  expect(r.stderr).toContain('brew install redis openssl prometheus');
  expect(r.stderr).not.toMatch(/Tests:.*passed/);
});
