import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// The console's pointers into the docs (issue 55, item 14): a link docs/X.md#anchor, or a mention
// docs/X.md, “Section”, must name a heading that docs/X.md has, as GitHub makes anchors of headings.

const ROOT = path.join(__dirname, '..', '..');

/** GitHub's anchor of a heading: lower case, punctuation but hyphens and underscores dropped, spaces as hyphens. */
export const githubSlug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function headings(doc: string): { titles: string[]; anchors: Set<string> } {
  const text = readFileSync(path.join(ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
  const titles = [...text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map((m) => m[1] ?? '');
  const anchors = new Set<string>();
  for (const title of titles) {
    const slug = githubSlug(title);
    let anchor = slug;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${slug}-${n}`;
    anchors.add(anchor);
  }
  return { titles, anchors };
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

interface Pointer {
  file: string;
  doc: string;
  anchor: string | null;
  section: string | null;
}

function pointers(): Pointer[] {
  return sources(path.join(ROOT, 'src', 'console')).flatMap((file) => {
    const code = readFileSync(file, 'utf8').replace(/\s+/g, ' ');
    const rel = path.relative(ROOT, file);
    return [
      ...[...code.matchAll(/docs\/([\w/-]+\.md)#([\w-]+)/g)].map((m) => ({
        file: rel,
        doc: `docs/${m[1] ?? ''}`,
        anchor: m[2] ?? '',
        section: null,
      })),
      ...[...code.matchAll(/docs\/([\w/-]+\.md), [“"]([^”"]+)[”"]/g)].map((m) => ({
        file: rel,
        doc: `docs/${m[1] ?? ''}`,
        anchor: null,
        section: m[2] ?? '',
      })),
    ];
  });
}

describe("the console's links into the docs", () => {
  it('When GitHub makes an anchor of a heading, then githubSlug makes the same', () => {
    expect(githubSlug('The feed and replays')).toBe('the-feed-and-replays');
    expect(githubSlug('What to bind and what to act on')).toBe('what-to-bind-and-what-to-act-on');
    expect(githubSlug('0014. An event (no queue) takes: `x_y`')).toBe('0014-an-event-no-queue-takes-x_y');
  });

  it('When the console points to a section of a doc, then the doc has that heading', () => {
    const found = pointers();
    expect(found.length).toBeGreaterThan(2);
    for (const p of found) {
      const { titles, anchors } = headings(p.doc);
      const ok = p.anchor !== null ? anchors.has(p.anchor) : titles.includes(p.section ?? '');
      expect({ ...p, ok }).toEqual({ ...p, ok: true });
    }
  });

  it('When a pointer names a section that does not exist, then it is caught', () => {
    const { titles } = headings('docs/EVENTS.md');
    expect(titles).not.toContain('Replay');
    expect(titles).toContain('The feed and replays');
  });
});
