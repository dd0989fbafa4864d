import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

// The script `npm run demo` runs after building (npm test has built already).
const demoScript = (): string => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const m = /^npm run build && node (\S+)$/.exec(pkg.scripts.demo ?? '');
  if (m === null) throw new Error(`unexpected demo script: ${pkg.scripts.demo}`);
  return join(__dirname, '..', m[1]!);
};

it('npm run demo shows a payload become data points and arrive at the webhook, then stops everything', async () => {
  const demo = spawn(process.execPath, [demoScript()], {
    env: { PATH: process.env.PATH ?? '', DEMO_DURATION_SECONDS: '3' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
  demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise((resolve) => demo.on('close', resolve)); // exited, its output read to the end
  expect(code).toBe(0);
  expect(out).toMatch(/inbound POST #1 -> 200 \{"topic":"plant-a","succeeded":\["boiler-temp","pump-running","tap-position"\]\}/);
  // the operator pages of both connectors, at the addresses the demo printed for them
  const conn = /inbound connector +(http:\S+) [\s\S]*outbound connector +(http:\S+) /.exec(out);
  expect(out).toContain(`operator pages        ${conn![2]}/  (webhooks, backlogs, data points)   ${conn![1]}/  (mappings, try a payload)`);
  expect(out).toMatch(/webhook received batch \d+-\d+_\d+-\d+ with 3 data points:\n {4}casdu 1 ioa 1001 value [\d.]+ at /);
  // the logs it named are still there after it stopped, and hold the connectors' lines
  const kept = /stopped\. The connectors' logs are kept: (\S+inbound\.log) and (\S+outbound\.log) \(rm -r (\S+) when done\)\.\n$/.exec(out);
  expect(kept).not.toBeNull();
  expect(out).toContain(`(logs: ${kept![1]})`);
  expect(readFileSync(kept![1]!, 'utf8')).toContain('"msg":"inbound connector listening"');
  expect(readFileSync(kept![2]!, 'utf8')).toContain('"msg":"outbound connector listening"');
  rmSync(kept![3]!, { recursive: true, force: true });
});
