// The documentation as tests read it: README.md and docs/*.md, their fenced blocks,
// headings (as GitHub turns them into anchors) and relative links.

import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

/** README.md and every page of docs/, as paths relative to the repository. */
export function docPages(): string[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...pages];
}

export function readDoc(page: string): string {
  return readFileSync(join(ROOT, page), 'utf8');
}

export interface Fence {
  readonly lang: string;
  readonly code: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The line before the opening fence (where an HTML-comment marker goes). */
  readonly before: string;
}

/** The fenced code blocks of a page, in order. */
export function fences(text: string): Fence[] {
  const lines = text.split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i] as string).startsWith('```'); i++) body.push(lines[i] as string);
    out.push({
      lang: open[1] as string,
      code: `${body.join('\n')}\n`,
      line: start + 1,
      before: start > 0 ? (lines[start - 1] as string) : '',
    });
  }
  return out;
}

/** The page's text with its fenced blocks blanked (their lines kept, so line numbers hold). */
export function prose(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((l) => {
      if (l.startsWith('```')) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : l;
    })
    .join('\n');
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a page's headings make (a repeated heading gets `-1`, `-2` …, as on GitHub). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export interface Link {
  readonly target: string;
  readonly line: number;
}

/** The relative links of a page's prose (`[text](target)` and `![alt](target)`); absolute URLs and mailto are left out. */
export function relativeLinks(text: string): Link[] {
  const out: Link[] = [];
  // Inline code may hold brackets that are not links; a link's text may run over lines.
  const bare = prose(text).replace(/`[^`\n]*`/g, (c) => '`'.repeat(c.length));
  for (const m of bare.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const target = m[1] as string;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    out.push({ target, line: bare.slice(0, m.index).split('\n').length });
  }
  return out;
}
