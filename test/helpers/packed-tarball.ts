// Packs the package as `npm pack` does for a user, lifecycle scripts included, from a copy of what
// the tarball holds: the clone's own package.json is never rewritten under tests running alongside.

import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const ROOT = new URL('../../', import.meta.url).pathname;
export const QUIET_NPM_ENV = {
  ...process.env,
  FENBS_MCP_LOG_LEVEL: 'warn',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

export interface PackedTarball {
  /** Absolute path of fenbs-mcp-<version>.tgz. */
  file: string;
  /** The paths `npm pack --json` listed. */
  files: string[];
  /** The folder the pack ran in (a copy of the clone's packed files, scripts/pack-manifest.js and package.json). */
  stage: string;
}

/** `npm pack` with its prepack and postpack scripts, over a built dist/ (which they then leave as it is). */
export async function packTarball(): Promise<PackedTarball> {
  const stage = mkdtempSync(join(tmpdir(), 'fenbs-stage-'));
  for (const entry of [
    'package.json',
    'README.md',
    'LICENSE',
    'bin',
    'dist',
    'examples',
    'docs',
    'SECURITY.md',
    'ARCHITECTURE.md',
    'CONTRIBUTING.md',
    'CHANGELOG.md',
  ])
    cpSync(join(ROOT, entry), join(stage, entry), { recursive: true });
  mkdirSync(join(stage, 'scripts'));
  cpSync(join(ROOT, 'scripts/pack-manifest.js'), join(stage, 'scripts/pack-manifest.js'));
  const destination = mkdtempSync(join(tmpdir(), 'fenbs-pack-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', destination], { cwd: stage, env: QUIET_NPM_ENV });
  // Lifecycle scripts print on stdout too; the JSON report is the last thing written.
  const [packed] = JSON.parse(stdout.slice(stdout.search(/^\[/m))) as { filename: string; files: { path: string }[] }[];
  return { file: join(destination, packed!.filename), files: packed!.files.map((file) => file.path), stage };
}
