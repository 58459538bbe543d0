// SECURITY.md stays true to the code: every module and test file its table names exists, and every test title it quotes is in that file.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const security = readFileSync(join(root, 'SECURITY.md'), 'utf8');
const rows = security.split('\n').filter((line) => line.startsWith('| **'));

/** The files a cell names (`src/…`, `test/…`), each with the quoted titles that follow it up to the next file. */
function citations(cell: string): { file: string; titles: string[] }[] {
  const parts = cell.split(/`((?:src|test)\/[^`]+)`/);
  const cited: { file: string; titles: string[] }[] = [];
  for (let index = 1; index < parts.length; index += 2) {
    const titles = [...parts[index + 1]!.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
    cited.push({ file: parts[index]!, titles });
  }
  return cited;
}

/** The longest run of a title that no template fills in (`%s`, `${…}`) nor the table shortens (`…`): what the source must hold word for word. */
function fixedPart(title: string): string {
  return title.split(/%[sdij]|\$\{[^}]*\}|…/).reduce((longest, part) => (part.length > longest.length ? part : longest), '');
}

describe('the SECURITY.md table', () => {
  it('has a row per boundary, each naming its enforcing module and its tests', () => {
    expect(rows.length).toBeGreaterThanOrEqual(19);
    for (const row of rows) {
      const cells = row.split(' | ');
      expect(citations(cells[3] ?? ''), row.slice(0, 60)).not.toEqual([]);
      expect(
        citations(cells[4] ?? '').some((cited) => cited.titles.length > 0),
        row.slice(0, 60),
      ).toBe(true);
    }
  });

  it('names only files that exist', () => {
    const missing = rows.flatMap((row) => citations(row).map((cited) => cited.file)).filter((file) => !existsSync(join(root, file)));
    expect(missing).toEqual([]);
  });

  it('quotes only test titles that are in the file it names', () => {
    const absent: string[] = [];
    for (const row of rows) {
      for (const { file, titles } of citations(row)) {
        if (!existsSync(join(root, file))) continue;
        // As the title reads, not as the source spells it: `\\u` in a string literal is the title's `\u`.
        const text = readFileSync(join(root, file), 'utf8').replaceAll('\\\\', '\\');
        for (const title of titles) if (file.startsWith('test/') && !text.includes(fixedPart(title))) absent.push(`${file}: "${title}"`);
      }
    }
    expect(absent).toEqual([]);
  });
});
