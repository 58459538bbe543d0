// Each identity-provider recipe in docs/reference.md is a command line the real option parser and
// configuration accept, with the settings its provider needs.

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildProgram, type CliOptions } from '../../../src/cli/program.js';
import { createConfig, type BridgeConfig } from '../../../src/config/config.js';

const reference = readFileSync(fileURLToPath(new URL('../../../docs/reference.md', import.meta.url)), 'utf8');
const section = reference.slice(reference.indexOf('## Identity providers'), reference.indexOf('\n## ', reference.indexOf('## Identity providers') + 1));
const recipes = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!.trim());
const KEY = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** The words of a recipe as a shell splits them, and the environment it sets in front. */
function words(recipe: string): { env: Record<string, string>; args: string[] } {
  const tokens = [...recipe.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2]!);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(tokens[0] ?? '')) {
    const [name, value] = tokens.shift()!.split(/=(.*)/s);
    env[name!] = value === '…' ? 'a-client-secret-from-the-console' : value!;
  }
  return { env, args: tokens };
}

async function configOf(recipe: string): Promise<BridgeConfig> {
  const { env, args } = words(recipe);
  expect(args.slice(0, 2)).toEqual(['fenbs-mcp', 'login']);
  let options: CliOptions | undefined;
  const { program } = buildProgram('0.0.0', args.slice(1), {
    bridge: () => Promise.resolve(0),
    doctor: () => Promise.resolve(0),
    shell: () => Promise.resolve(0),
    account: (_command, given) => {
      options = given;
      return Promise.resolve(0);
    },
  });
  await program.parseAsync(args.slice(1), { from: 'user' });
  return createConfig({ options: options!, env, readTextFile: () => KEY, nodeVersion: process.versions.node });
}

describe('the identity-provider recipes', () => {
  it('are there, one per provider', () => {
    expect(recipes).toHaveLength(7);
  });

  it('Entra ID: a pre-registered client, no resource, the App ID URI scope with offline_access', async () => {
    const { oauth } = await configOf(recipes[0]!);
    expect(oauth).toMatchObject({ clientId: expect.any(String), resource: false, scope: expect.stringMatching(/^api:\/\/\S+\/\.default offline_access$/) });
  });

  it('Auth0: the audience as an extra authorization parameter', async () => {
    expect((await configOf(recipes[1]!)).oauth.authorizeParams).toEqual([['audience', 'https://api.example.com']]);
  });

  it('Google: a client with its secret from the environment, access_type=offline and prompt=consent', async () => {
    const { oauth } = await configOf(recipes[2]!);
    expect(oauth.clientSecret).toBe('a-client-secret-from-the-console');
    expect(oauth.authorizeParams).toEqual([
      ['access_type', 'offline'],
      ['prompt', 'consent'],
    ]);
  });

  it('Okta and Keycloak: the issuer under a path', async () => {
    expect((await configOf(recipes[3]!)).oauth.issuer?.pathname).toBe('/oauth2/default');
    expect((await configOf(recipes[4]!)).oauth.issuer?.pathname).toBe('/realms/team');
  });

  it('device-only and machine-only servers: the device grant, and client credentials with a private key', async () => {
    expect((await configOf(recipes[5]!)).oauth.grant).toBe('device-code');
    const machine = (await configOf(recipes[6]!)).oauth;
    expect(machine).toMatchObject({ grant: 'client-credentials', clientId: 'ci-robot', clientKey: { algorithm: 'ES256' } });
  });
});
