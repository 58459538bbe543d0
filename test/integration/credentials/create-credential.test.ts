// In-process: createCredential picks the run's credential from the config, warns about the ones it leaves, and registers its secret.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createConfig, type RawOptions } from '../../../src/config/config.js';
import { createCredential, fixedCredential } from '../../../src/credentials/create-credential.js';
import { createRedactor } from '../../../src/logging/redactor.js';

const env = { PATH: process.env.PATH };
const configOf = (options: RawOptions, variables: Record<string, string> = {}) =>
  createConfig({ options: { url: 'https://mcp.example/mcp', ...options }, env: { ...env, ...variables }, readTextFile: () => 'file-token-value\n' });
const recording = () => {
  const lines: { level: number; msg: string }[] = [];
  return { lines, logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) }) };
};

describe('createCredential', () => {
  it('sends the env token as a bearer token, registered with the redactor', async () => {
    const redact = createRedactor([]);
    const credential = await createCredential(configOf({}, { FENBS_TOKEN: 'env-token-value' }), { env, logger: recording().logger, redact });
    expect(credential.source).toBe('env FENBS_TOKEN');
    expect(credential.authorization()).toBe('Bearer env-token-value');
    expect(await credential.renew({ status: 401, wwwAuthenticate: undefined, sent: 'Bearer env-token-value' }, new AbortController().signal)).toBe(false);
    expect(redact('env-token-value')).toBe('[REDACTED]');
  });

  it('takes env, then --token-file, then --token-command, and warns about each one it leaves', async () => {
    const { lines, logger } = recording();
    const credential = await createCredential(configOf({ tokenFile: '/t', tokenCommand: 'printf never-run' }, { FENBS_TOKEN: 'env-token-value' }), {
      env,
      logger,
      redact: createRedactor([]),
    });
    expect(credential.source).toBe('env FENBS_TOKEN');
    expect(lines.filter((line) => line.level === 40).map((line) => line.msg)).toEqual([
      'file /t is set but not used: env FENBS_TOKEN comes first',
      '--token-command is set but not used: env FENBS_TOKEN comes first',
    ]);
    const fromFile = await createCredential(configOf({ tokenFile: '/t', tokenCommand: 'printf never-run' }), { env, logger, redact: createRedactor([]) });
    expect([fromFile.source, fromFile.authorization()]).toEqual(['file /t', 'Bearer file-token-value']);
  });

  it('runs --token-command before it resolves', async () => {
    const credential = await createCredential(configOf({ tokenCommand: 'printf command-token-value' }), {
      env,
      logger: recording().logger,
      redact: createRedactor([]),
      tokenCommandTimeoutMs: 10_000,
    });
    expect([credential.source, credential.authorization()]).toEqual(['--token-command', 'Bearer command-token-value']);
    await credential.close?.();
  });

  it('sends an Authorization -H from the environment as it is, under its own scheme', async () => {
    const credential = await createCredential(configOf({ header: ['Authorization: token ${GH_TOKEN}'] }, { GH_TOKEN: 'gh-token-value' }), {
      env,
      logger: recording().logger,
      redact: createRedactor([]),
    });
    expect([credential.source, credential.authorization()]).toEqual(['-H Authorization from $GH_TOKEN', 'token gh-token-value']);
  });

  it('sends nothing when no credential is set, and a 401 stays a 401', async () => {
    const credential = await createCredential(configOf({}), { env, logger: recording().logger, redact: createRedactor([]) });
    expect([credential.source, credential.authorization()]).toEqual(['none', undefined]);
    expect(await credential.renew({ status: 401, wwwAuthenticate: 'Bearer', sent: undefined }, new AbortController().signal)).toBe(false);
  });

  it('warns that a static credential shorter than 8 characters cannot be masked on stdout', async () => {
    const { lines, logger } = recording();
    await createCredential(configOf({}, { FENBS_TOKEN: 'short' }), { env, logger, redact: createRedactor([]) });
    expect(lines.map((line) => line.msg)).toEqual([expect.stringMatching(/^the credential from env FENBS_TOKEN is shorter than 8 characters/)]);
  });

  it('warns that a -H value from the environment shorter than 8 characters cannot be masked on stdout, naming the header and not the value', async () => {
    const { lines, logger } = recording();
    const redact = createRedactor([]);
    await createCredential(configOf({ header: ['X-Api-Key: ${SHORT_KEY}', 'X-Team: ${TEAM_KEY}'] }, { SHORT_KEY: 'k7q2', TEAM_KEY: 'long-enough-team-key' }), {
      env,
      logger,
      redact,
    });
    expect(lines.map((line) => line.msg)).toEqual([
      'the -H X-Api-Key value from $SHORT_KEY is shorter than 8 characters: too short to tell apart from ordinary text, so it cannot be masked in server replies on stdout',
    ]);
    expect(JSON.stringify(lines)).not.toContain('k7q2');
    // Registered all the same: the logs mask a secret of 4 characters or more.
    expect(redact('sent k7q2 and long-enough-team-key')).toBe('sent [REDACTED] and [REDACTED]');
  });

  it('warns once about a short -H Authorization from the environment, which is both the credential and a -H value', async () => {
    const { lines, logger } = recording();
    await createCredential(configOf({ header: ['Authorization: Bearer ${SHORT_TOKEN}'] }, { SHORT_TOKEN: 'tok5x' }), {
      env,
      logger,
      redact: createRedactor([]),
    });
    expect(lines.map((line) => line.msg)).toEqual([
      expect.stringMatching(/^the credential from -H Authorization from \$SHORT_TOKEN is shorter than 8 characters/),
    ]);
  });
});

describe('fixedCredential', () => {
  it('gives the static or empty credential a config names, and refuses a token command, which must be run first', () => {
    expect(fixedCredential(configOf({}, { FENBS_TOKEN: 'env-token-value' })).authorization()).toBe('Bearer env-token-value');
    expect(fixedCredential(configOf({})).authorization()).toBeUndefined();
    expect(() => fixedCredential(configOf({ tokenCommand: 'printf x' }))).toThrow(/createCredential/);
  });
});
