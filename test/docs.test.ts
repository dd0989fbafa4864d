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

  it('names no path outside the repository', () => {
    expect(text.match(/\.\.\/shared|\/work\/|shared\/spec/g)).toBeNull();
  });
});
