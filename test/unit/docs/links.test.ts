// The links between the user's documents: every file a link names exists, and every #anchor is a heading there.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const DOCUMENTS = ['README.md', 'docs/reference.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md'];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*]/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => anchorOf(heading!)));
}

describe('the documents', () => {
  it.each(DOCUMENTS.map((file) => [file]))('%s links only to files that exist and to headings they have', (file) => {
    const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, anchor] = target!.split('#');
      const linked = path === '' ? file : join(dirname(file), path!);
      expect(existsSync(join(root, linked)), `${file} links to ${target}`).toBe(true);
      if (anchor !== undefined && linked.endsWith('.md')) expect([...anchors(linked)], `${file} links to ${target}`).toContain(anchor);
    }
  });
});
