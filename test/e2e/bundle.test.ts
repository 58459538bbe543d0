// The Claude Desktop bundle as Claude Desktop meets it: written by `npm run bundle`, accepted by
// `mcpb validate`, unpacked by mcpb, and started with the command and environment its manifest gives.
import { getMcpConfigForManifest, hasRequiredConfigMissing } from '@anthropic-ai/mcpb/node';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_URL } from '../../src/config/config.js';
import { startDemoServer, type DemoServer } from '../../src/demo/demo-server.js';
import { initializedNotification, initializeRequest, spawnLineProcess } from '../helpers/spawn-bridge.js';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const mcpb = join(root, 'node_modules/.bin/mcpb');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const TOKEN = 'bundle-test-token-0123456789';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

/** The server config Claude Desktop derives from the manifest and the user's settings (mcpb's own code). */
async function serverConfig(manifest: any, extensionPath: string, userConfig: Record<string, string>) {
  return getMcpConfigForManifest({ manifest, extensionPath, systemDirs: {}, userConfig, pathSeparator: sep });
}

/** Starts the server config as Claude Desktop does: `node` is the host's own Node (here, this one). */
function startServer(config: { command: string; args?: string[] | undefined; env?: Record<string, string> | undefined }) {
  return spawnLineProcess(config.command === 'node' ? process.execPath : config.command, config.args ?? [], {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...config.env,
  });
}

describe('the Claude Desktop bundle', () => {
  let bundleOutput: string;
  let unpacked: string;
  let manifest: any;
  let demo: DemoServer;

  beforeAll(async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'bundle'], { cwd: root });
    bundleOutput = stdout;
    unpacked = mkdtempSync(join(tmpdir(), 'fenbs-mcpb-unpacked-'));
    await run(mcpb, ['unpack', join(root, `fenbs-mcp-${version}.mcpb`), unpacked]);
    manifest = JSON.parse(readFileSync(join(unpacked, 'manifest.json'), 'utf8'));
    demo = await startDemoServer({ token: TOKEN });
  }, 120_000);

  afterAll(async () => {
    await demo?.close();
  });

  it('is written by `npm run bundle` as fenbs-mcp-<version>.mcpb after `mcpb validate` accepts its manifest', () => {
    expect(bundleOutput).toContain('Manifest schema validation passes!');
    expect(bundleOutput).toContain(`filename: fenbs-mcp-${version}.mcpb`);
    expect(manifest.version).toBe(version);
  });

  it('holds a manifest that `mcpb validate` accepts once unpacked', async () => {
    const { stdout } = await run(mcpb, ['validate', join(unpacked, 'manifest.json')]);
    expect(stdout.trim()).toBe('Manifest schema validation passes!');
  });

  it('holds the bin, the self-contained build, the licences and the manifest, and no node_modules', () => {
    const files = filesUnder(unpacked);
    for (const file of files) expect(file).toMatch(/^(bin\/fenbs-mcp\.js|bin\/package\.json|dist\/.+\.(js|txt)|LICENSE|manifest\.json|package\.json)$/);
    expect(files).toEqual(
      expect.arrayContaining([
        'bin/fenbs-mcp.js',
        'bin/package.json',
        'dist/cli.js',
        'dist/THIRD-PARTY-LICENSES.txt',
        'LICENSE',
        'manifest.json',
        'package.json',
      ]),
    );
    expect(manifest.server).toMatchObject({
      type: 'node',
      entry_point: 'bin/fenbs-mcp.js',
      mcp_config: { command: 'node', args: ['${__dirname}/bin/fenbs-mcp.js'] },
    });
  });

  it('asks for the token as a required, sensitive setting, so Claude Desktop starts nothing without it', async () => {
    expect(manifest.user_config.token).toMatchObject({ type: 'string', sensitive: true, required: true });
    expect(hasRequiredConfigMissing({ manifest, userConfig: {} })).toBe(true);
    expect(await serverConfig(manifest, unpacked, {})).toBeUndefined();
  });

  it('hands the token to the bridge in FENBS_TOKEN and never on its command line', async () => {
    const config = await serverConfig(manifest, unpacked, { token: TOKEN });
    expect(config?.env?.FENBS_TOKEN).toBe(TOKEN);
    expect(JSON.stringify(config?.args)).not.toContain(TOKEN);
  });

  it('answers initialize and tools/list from the packed entry point, with the token and URL from the settings', async () => {
    const config = await serverConfig(manifest, unpacked, { token: TOKEN, url: demo.url.href });
    expect(config?.args).toEqual([join(unpacked, 'bin/fenbs-mcp.js')]);
    const server = startServer(config!);
    server.send(initializeRequest(1));
    const initialized = await server.reply(1);
    expect(initialized.result.serverInfo.name).toBe('fenbs-demo');
    server.send(initializedNotification);
    server.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const listed = await server.reply(2);
    expect(listed.result.tools.map((tool: { name: string }) => tool.name)).toContain('tasks_import');
    server.end();
    expect((await server.exited).code).toBe(0);
  });

  it('points the bridge at fenbs when the URL setting is left at its default or cleared', async () => {
    expect(manifest.user_config.url).toMatchObject({ type: 'string', required: false, default: DEFAULT_URL });
    expect((await serverConfig(manifest, unpacked, { token: TOKEN }))?.env?.FENBS_MCP_URL).toBe(DEFAULT_URL);
    // A cleared field reaches the bridge as an empty FENBS_MCP_URL, which means "the default".
    const cleared = await serverConfig(manifest, unpacked, { token: TOKEN, url: '' });
    expect(cleared?.env?.FENBS_MCP_URL).toBe('');
    const server = startServer(cleared!);
    server.end();
    expect((await server.exited).code).toBe(0);
    const started = server
      .stderr()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .find((entry) => entry.msg === 'fenbs-mcp started');
    expect(started.url).toBe(DEFAULT_URL);
  });
});
