import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The map of the code (README, Development) as the imports state it: each folder imports only from
 * its own floor and those below, no module imports another that imports it back, and a file over
 * 300 lines says why at its top.
 */
const root = join(__dirname, '..');
const files: string[] = [];
(function walk(d: string): void {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith('.ts')) files.push(p);
  }
})(join(root, 'src'));
const rel = (p: string) => relative(root, p).split('\\').join('/');
const texts = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
const imports = new Map(
  files.map((f) => {
    const out = new Set<string>();
    for (const m of texts.get(f)!.matchAll(/(?:import|export)\s[^'";]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
      const base = resolve(dirname(f), m[1] ?? m[2]!);
      const target = [`${base}.ts`, join(base, 'index.ts')].find((c) => texts.has(c));
      if (target !== undefined) out.add(target);
    }
    return [f, out] as const;
  }),
);

/** A file's floor: its folder under src (a unit's folder inside an area), or the file itself at the top. */
const unitOf = (f: string): string => {
  const parts = rel(f).split('/');
  if (parts.length === 2) return parts[1]!;
  return ['streams', 'http'].includes(parts[1]!) && parts.length > 3 ? `${parts[1]}/${parts[2]}` : parts[1]!;
};

/** What each floor may import besides itself; anything not named here may import any floor but those it must stay below. */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  mapping: [],
  telemetry: [],
  config: ['mapping'],
  'streams/store': [],
  'streams/read': ['config', 'mapping', 'telemetry', 'streams/store'],
  'streams/webhook': ['config', 'mapping', 'telemetry', 'streams/store', 'streams/read'],
  'streams/image': ['config', 'mapping', 'telemetry', 'streams/store', 'streams/read', 'streams/webhook'],
  'streams/interrogation': ['config', 'mapping', 'telemetry', 'streams/store', 'streams/read', 'streams/webhook'],
  'streams/push': ['config', 'mapping', 'telemetry', 'streams/store', 'streams/read', 'streams/webhook', 'streams/image', 'streams/interrogation'],
  'watchConfig.ts': ['config', 'mapping'],
  'http/app': ['config', 'mapping', 'telemetry'],
  'http/openapi': ['config', 'mapping', 'telemetry'],
  'http/inbound': ['config', 'mapping', 'telemetry', 'streams/store', 'http/app'],
  'http/outbound': ['config', 'mapping', 'telemetry', 'streams/store', 'streams/read', 'streams/webhook', 'streams/image', 'http/app'],
  // the operator page in the browser: nothing of the server (it is a client of the public endpoints)
  ui: [],
};
const unitKey = (f: string) => (rel(f).startsWith('src/streams/watchConfig.ts') ? 'watchConfig.ts' : unitOf(f));

it('each floor imports only from itself and the floors below it', () => {
  const against: string[] = [];
  for (const [f, targets] of imports) {
    const allowed = MAY_IMPORT[unitKey(f)];
    if (allowed === undefined) continue;
    for (const t of targets) if (unitKey(t) !== unitKey(f) && !allowed.includes(unitKey(t))) against.push(`${rel(f)} -> ${rel(t)}`);
  }
  expect(against).toEqual([]);
  // every floor below the composition roots is named above: a new folder takes its place in the map
  const floors = new Set(files.map(unitKey));
  expect([...floors].filter((u) => MAY_IMPORT[u] === undefined).sort()).toEqual(['cli', 'cli.ts', 'demo', 'healthcheck.ts', 'runtime', 'version.ts']);
});

it('no module imports another that imports it back', () => {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (f: string, path: string[]): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].map(rel).join(' -> '));
      return;
    }
    state.set(f, 'open');
    for (const t of imports.get(f)!) visit(t, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of files) visit(f, []);
  expect(cycles).toEqual([]);
});

it('a file over 300 lines says why at its top', () => {
  const long = files.filter((f) => texts.get(f)!.split('\n').length > 300);
  expect(long.filter((f) => !/over 300 lines/.test(texts.get(f)!.split('\n').slice(0, 30).join('\n'))).map(rel)).toEqual([]);
});
