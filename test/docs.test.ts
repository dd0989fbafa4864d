import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The user documentation stands alone: README.md, docs/ and bench/README.md link only inside the repository. */
const root = join(__dirname, '..');
const docsDir = join(root, 'docs');
const markdown = [
  join(root, 'README.md'),
  join(root, 'bench', 'README.md'),
  ...(existsSync(docsDir) ? readdirSync(docsDir).filter((f) => f.endsWith('.md')).map((f) => join(docsDir, f)) : []),
];

/** Markdown links `[text](target)` and bare autolinks `<scheme:…>`, outside code. */
const linksOf = (text: string): string[] => {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g), ...prose.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]+)>/gi)].map((m) => m[1]!);
};

/** The anchors a markdown file's headings get (as GitHub makes them: lower case, punctuation dropped, spaces as -). */
const anchorsOf = (text: string): Set<string> =>
  new Set([...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));

describe.each(markdown.map((f) => [relative(root, f), f]))('%s', (_name, file) => {
  const text = readFileSync(file, 'utf8');

  it('links only to files inside the repository that exist', () => {
    const bad = linksOf(text).filter((link) => {
      if (link.startsWith('#')) return false;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return true; // http:, https:, mailto:, file: … leave the repository
      const target = resolve(dirname(file), link.split('#')[0]!);
      return relative(root, target).startsWith('..') || !existsSync(target) || !(statSync(target).isFile() || statSync(target).isDirectory());
    });
    expect(bad).toEqual([]);
  });

  it('links to headings that exist: every #anchor names a heading of the file it points into', () => {
    const broken = linksOf(text).filter((link) => link.includes('#') && !/^[a-z][a-z0-9+.-]*:/i.test(link)).filter((link) => {
      const [path, anchor] = link.split('#') as [string, string];
      const target = path === '' ? file : resolve(dirname(file), path);
      return !existsSync(target) || !statSync(target).isFile() || !anchorsOf(readFileSync(target, 'utf8')).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it('names no path outside the repository', () => {
    expect(text.match(/\.\.\/shared|\/work\/|shared\/spec/g)).toBeNull();
  });
});
