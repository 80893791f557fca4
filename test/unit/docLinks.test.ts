/**
 * The docs a newcomer reads stay connected: every relative link in README.md, docs/*.md and bench/README.md (and
 * bench/NOTES.md, where the bench's history went) names a file of the repository that exists and, with a #anchor,
 * a heading of that file (GitHub's slugs); README.md stays at most 200 lines and opens with its two commands.
 * It reads the real files, so a section moved or a file renamed fails here instead of on a reader.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..', '..');
const README_MAX_LINES = 200;

/** The markdown files whose links are checked, repo-relative. docs/ pages added later are picked up. */
function docFiles(): string[] {
  const docsDir = join(REPO, 'docs');
  const docs = existsSync(docsDir)
    ? readdirSync(docsDir)
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => `docs/${f}`)
    : [];
  const bench = ['bench/README.md', 'bench/NOTES.md'].filter((f) => existsSync(join(REPO, f)));
  return ['README.md', ...docs, ...bench];
}

/** Lines with fenced code blocks blanked (kept as empty lines, so line numbers stay right). */
function proseLines(text: string): string[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && opener) {
      fence = opener;
      return '';
    }
    if (fence !== null) {
      if (opener && opener[0] === fence[0] && opener.length >= fence.length && line.trim() === opener) fence = null;
      return '';
    }
    return line;
  });
}

/**
 * GitHub's anchor for a heading: the rendered text (links and code spans by their text, emphasis marks dropped),
 * lowercased, every character that is not a letter, digit, mark, connector (`_`), `-` or space removed, and
 * spaces turned into `-` (each one: GitHub does not collapse them).
 */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|__|\*)(.+?)\1/g, '$2');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown text offers: its headings' slugs (repeats get -1, -2, ... as on GitHub) and HTML ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

interface Link {
  readonly line: number;
  readonly target: string;
}

/** The link targets of a markdown text, outside code: inline links and images, and reference definitions. */
function linksOf(text: string): Link[] {
  const links: Link[] = [];
  proseLines(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ line: i + 1, target: m[1] });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line);
    if (definition) links.push({ line: i + 1, target: definition[1] });
  });
  return links;
}

/** What is wrong with each relative link of `file` (repo-relative) whose text is `text`: one message a link. */
function brokenLinks(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const { line, target } of linksOf(text)) {
    const where = `${file}:${line} -> ${target}`;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ... : not ours to check
    if (target === '') {
      problems.push(`${where}: empty link`);
      continue;
    }
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
    const absolute =
      pathPart === ''
        ? join(REPO, file)
        : pathPart.startsWith('/')
          ? join(REPO, pathPart)
          : resolve(REPO, dirname(file), pathPart);
    if (absolute !== REPO && !absolute.startsWith(REPO + sep)) {
      problems.push(`${where}: points outside the repository`);
      continue;
    }
    if (!existsSync(absolute)) {
      problems.push(`${where}: no such file ${relative(REPO, absolute)}`);
      continue;
    }
    if (anchor === null) continue;
    if (statSync(absolute).isDirectory()) {
      problems.push(`${where}: an anchor on a folder`);
    } else if (absolute.endsWith('.md')) {
      const target = pathPart === '' ? text : readFileSync(absolute, 'utf8');
      if (!anchorsOf(target).has(anchor))
        problems.push(`${where}: no heading #${anchor} in ${relative(REPO, absolute)}`);
    } else if (!/^L\d+(C\d+)?(-L\d+(C\d+)?)?$/.test(anchor)) {
      problems.push(`${where}: only line anchors (#L10, #L10-L20) exist in ${relative(REPO, absolute)}`);
    }
  }
  return problems;
}

const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

describe('githubSlug', () => {
  it('lowercases, drops punctuation but - and _, and turns each space into -', () => {
    expect(githubSlug('Where to change what')).toBe('where-to-change-what');
    expect(githubSlug('Cores of its own for the Talker (kept, opt-in: `engine.cpus`)')).toBe(
      'cores-of-its-own-for-the-talker-kept-opt-in-enginecpus',
    );
    expect(githubSlug("Where c=10's CPU goes; stage_nice")).toBe('where-c10s-cpu-goes-stage_nice');
    expect(githubSlug('a -> b')).toBe('a---b');
    expect(githubSlug('**Bold** and [a link](x.md)')).toBe('bold-and-a-link');
  });

  it('numbers repeated headings as GitHub does', () => {
    expect([...anchorsOf('# A\n## Notes\n```\n# not a heading\n```\n### Notes\n')]).toEqual(['a', 'notes', 'notes-1']);
  });
});

describe('the link checker on made-up pages (it can fail)', () => {
  it('reports a missing file, a missing heading, a path out of the repository and a bad anchor on code', () => {
    const page = [
      '[ok](bench/README.md) [ok too](#a-heading) [external](https://example.com/x.md#whatever)',
      '# A heading',
      '[gone](docs/no-such-page.md)',
      '[no heading](README.md#no-such-heading-anywhere)',
      '[outside](../elsewhere/README.md)',
      '[code](package.json#scripts)',
      '`[in code](nowhere.md)`',
      '```',
      '[in a block](nowhere.md)',
      '```',
    ].join('\n');
    expect(brokenLinks('README.md', page)).toEqual([
      'README.md:3 -> docs/no-such-page.md: no such file docs/no-such-page.md',
      'README.md:4 -> README.md#no-such-heading-anywhere: no heading #no-such-heading-anywhere in README.md',
      'README.md:5 -> ../elsewhere/README.md: points outside the repository',
      'README.md:6 -> package.json#scripts: only line anchors (#L10, #L10-L20) exist in package.json',
    ]);
  });

  it('resolves a link from the folder of the page it is on', () => {
    expect(brokenLinks('docs/x.md', '[up](../README.md) [wrong](bench/README.md)')).toEqual([
      'docs/x.md:1 -> bench/README.md: no such file docs/bench/README.md',
    ]);
  });
});

describe('the repository docs', () => {
  it.each(docFiles())('%s: every relative link resolves', (file) => {
    expect(brokenLinks(file, readFileSync(join(REPO, file), 'utf8'))).toEqual([]);
  });

  it(`README.md is at most ${README_MAX_LINES} lines and opens with the two commands: serve, and test`, () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    expect(lineCount(readme)).toBeLessThanOrEqual(README_MAX_LINES);
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(firstBlock).toContain('npm start');
    expect(firstBlock).toContain('bash .ci/run');
  });
});
