// The layer rule of src/ (scripts/check-layers.js, run by npm run lint): what it refuses, and that src/ keeps it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain script without types; its functions take and return plain data.
import { checkLayers, importsOf, LAYERS, readSources } from '../../scripts/check-layers.js';

const check = checkLayers as (sources: Record<string, string>, layers?: Record<string, string[]>) => string[];

describe('the layer rule', () => {
  it('holds for src/ as it is: every import allowed, no cycle', () => {
    expect(check(readSources(fileURLToPath(new URL('../../src', import.meta.url))) as Record<string, string>)).toEqual([]);
  });

  it('refuses core importing another station, naming the file, the layers and what core may import', () => {
    const problems = check({
      'core/errors.ts': "import { sendHttp } from '../http/send.js';\n",
      'http/send.ts': "import { BridgeError } from '../core/errors.js';\n",
    });
    expect(problems).toContain('src/core/errors.ts: core may not import http (src/http/send.ts); it may import nothing outside itself');
  });

  it('refuses http importing the pipeline, a type-only import and a dynamic import included', () => {
    const problems = check({
      'http/endpoint.ts': "import type { PendingRequest } from '../pipeline/in-flight.js';\nconst later = () => import('../pipeline/forwarder.js');\n",
      'pipeline/in-flight.ts': '',
      'pipeline/forwarder.ts': '',
    });
    expect(problems).toHaveLength(2);
    expect(problems.every((problem) => problem.startsWith('src/http/endpoint.ts: http may not import pipeline'))).toBe(true);
  });

  it('refuses a transport importing the pipeline above it, even for a type', () => {
    const problems = check({
      'transports/streamable-http.ts': "import type { PendingRequest } from '../pipeline/in-flight.js';\n",
      'pipeline/in-flight.ts': '',
    });
    expect(problems).toEqual([
      'src/transports/streamable-http.ts: transports may not import pipeline (src/pipeline/in-flight.ts); it may import core, logging, config, http, eras',
    ]);
  });

  it('lets no folder but the pipeline itself, bridge.ts and the entry points import the pipeline', () => {
    const importers = Object.entries(LAYERS as Record<string, string[]>)
      .filter(([, allowed]) => allowed.includes('pipeline'))
      .map(([layer]) => layer);
    expect(importers.sort()).toEqual(['bridge.ts', 'doctor']);
    // shell/ and cli/ reach it only through bridge.ts (and cli through doctor/): a planted import fails.
    for (const planted of [
      'shell/commands.ts',
      'cli/main.ts',
      'eras/era-translator.ts',
      'connection.ts',
      'http/endpoint.ts',
      'credentials/create-credential.ts',
    ]) {
      const problems = check({
        [planted]: "import { Forwarder } from './pipeline/forwarder.js';\n".replace('./', planted.includes('/') ? '../' : './'),
        'pipeline/forwarder.ts': '',
      });
      expect(problems, planted).toHaveLength(1);
      expect(problems[0], planted).toMatch(/may not import pipeline \(src\/pipeline\/forwarder\.ts\)/);
    }
  });

  it('finds an import cycle inside one folder, which no folder rule catches', () => {
    expect(
      check({ 'logging/logger.ts': "import type { Redactor } from './redactor.js';\n", 'logging/redactor.ts': "import type { Logger } from './logger.js';\n" }),
    ).toEqual(['import cycle among src/logging/logger.ts, src/logging/redactor.ts']);
  });

  it('refuses a folder the rule does not name, and an import of a file that is not there', () => {
    expect(check({ 'utils/misc.ts': '', 'core/a.ts': "import { b } from './b.js';\n" })).toEqual([
      'src/utils/misc.ts: in no layer of the rule (a new folder needs its row in scripts/check-layers.js and ARCHITECTURE.md)',
      'src/core/a.ts: imports ./b.js, which is not a file of src/',
    ]);
  });

  it('reads static, type-only, side-effect and dynamic imports, and only relative ones', () => {
    const text =
      "import { a } from './a.js';\nimport type { B } from '../b/b.js';\nimport './c.js';\nconst d = await import('./d.js');\nimport { pino } from 'pino';\n";
    expect(importsOf(text)).toEqual(['./a.js', '../b/b.js', './c.js', './d.js']);
  });

  it('lets every layer import only layers below it in the table, so the table itself has no cycle', () => {
    const order = Object.keys(LAYERS as Record<string, string[]>);
    for (const [layer, allowed] of Object.entries(LAYERS as Record<string, string[]>)) {
      for (const target of allowed) expect(order.indexOf(target), `${layer} → ${target}`).toBeLessThan(order.indexOf(layer));
    }
  });

  it('is the table ARCHITECTURE.md shows, row for row', () => {
    const text = readFileSync(fileURLToPath(new URL('../../ARCHITECTURE.md', import.meta.url)), 'utf8');
    const section = text.slice(text.indexOf('## Folders and the layer rule'), text.indexOf('## Modules'));
    const shown = Object.fromEntries(
      [...section.matchAll(/^\| `([^`]+?)\/?` \| .* \| (nothing|(?:`[^`]+`(?:, )?)+) \|$/gm)].map(([, layer, imports]) => [
        layer,
        imports === 'nothing' ? [] : [...imports!.matchAll(/`([^`]+)`/g)].map((match) => match[1]),
      ]),
    );
    expect(shown).toEqual(LAYERS);
  });
});
