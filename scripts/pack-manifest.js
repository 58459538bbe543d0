// The package.json that npm pack and npm publish put in the tarball: what an installed package
// needs, without the build scripts and devDependencies of the clone. `prepack` (write) builds dist/
// when it is missing or older than its sources, keeps the clone's package.json aside and writes the
// published one; `postpack` (restore) puts the clone's back.
//
// Why: npm runs (or, from 11.19, warns about: "not yet covered by allowScripts") a dependency's
// `prepare` on every install of a tarball, and lists its devDependencies; the bundle in dist/ needs
// neither. npm reads the file from disk after `prepack`, so that is where it is rewritten.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const manifestFile = join(root, 'package.json');
// `*.orig` is in .gitignore: a pack cut short leaves nothing to commit by mistake.
const cloneManifestFile = join(root, 'package.json.orig');
/** What an installed package reads of its package.json: npm (name, version, bin, engines) and the CLI (version, type). */
const PUBLISHED_FIELDS = ['name', 'version', 'description', 'type', 'bin', 'files', 'engines', 'license', 'keywords', 'repository', 'homepage', 'bugs'];
/** What the bundle is built from (scripts/build.js). */
const BUILD_INPUTS = ['src', 'scripts/build.js', 'scripts/lazy-builtins.js', 'package-lock.json'];

function newestChange(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestChange(join(path, name))));
}

function distIsCurrent() {
  const bundle = join(root, 'dist/cli.js');
  if (!existsSync(bundle)) return false;
  const built = statSync(bundle).mtimeMs;
  return BUILD_INPUTS.every((input) => !existsSync(join(root, input)) || newestChange(join(root, input)) <= built);
}

function restore() {
  if (existsSync(cloneManifestFile)) renameSync(cloneManifestFile, manifestFile);
}

function write() {
  // A pack cut short left the published file in place: start from the clone's again.
  restore();
  // `prepare` built dist/ on pack before; the published manifest has no `prepare`, so build here,
  // but not again over a current dist/ (a rebuild empties dist/ under whatever is running it).
  if (!distIsCurrent()) execFileSync(process.execPath, [join(root, 'scripts/build.js')], { cwd: root, stdio: ['ignore', 2, 2] });
  const text = readFileSync(manifestFile, 'utf8');
  const manifest = JSON.parse(text);
  const published = Object.fromEntries(PUBLISHED_FIELDS.filter((field) => field in manifest).map((field) => [field, manifest[field]]));
  writeFileSync(cloneManifestFile, text);
  writeFileSync(manifestFile, `${JSON.stringify(published, null, 2)}\n`);
}

const mode = process.argv[2];
if (mode === 'write') write();
else if (mode === 'restore') restore();
else {
  process.stderr.write('usage: node scripts/pack-manifest.js write|restore\n');
  process.exitCode = 2;
}
