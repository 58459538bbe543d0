// Shared suite, credentials: --token-command and its renewal after a 401, and header secrets taken from the environment.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { result, sendJson, serversForFile, stdoutProblems, type McpServer, type RouteContext } from '../helpers/hardening-servers.js';
import type { BridgeMode, RunningBridge } from '../helpers/bridge-mode.js';
import { pidIn, waitUntilGone } from '../helpers/processes.js';
import { initializedNotification, initializeRequest } from '../helpers/spawn-bridge.js';

const call = (id: string, name = id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const okText = (name: string) => ({ content: [{ type: 'text', text: `ok ${name}` }] });
/** What a run of the token command left behind: one line per run in the count file. */
const runsOf = (count: string) =>
  readFileSync(count, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;

/**
 * A server that takes one bearer token at a time, as an authorization server that rotated it
 * would make it: any other gets 401 with a Bearer challenge (authorization §Error Handling).
 */
interface RotatingServer {
  server: McpServer;
  accept(token: string): void;
}

/** Defines the suite against bridges started by `mode`. */
export function defineCredentialsSuite(mode: BridgeMode): void {
  const { serve, track } = serversForFile();
  const bridge = (args: string[], env: Record<string, string> = {}): RunningBridge => {
    const started = mode.start(args, { PATH: process.env.PATH ?? '', ...env });
    track(() => started.kill());
    return started;
  };

  const rotatingServer = async (
    first: string,
    refusal: (context: RouteContext) => void = ({ res }) =>
      sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' }),
  ): Promise<RotatingServer> => {
    let accepted = first;
    const server = await serve({
      route: (context) => {
        if (context.req.headers.authorization === `Bearer ${accepted}`) return false;
        refusal(context);
        return true;
      },
    });
    return { server, accept: (token) => (accepted = token) };
  };

  /** A token command that prints the token file and counts its runs; the test writes the file. */
  const tokenCommand = (token: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'fenbs-token-command-'));
    const files = { token: join(dir, 'token'), count: join(dir, 'runs') };
    writeFileSync(files.token, `${token}\n`);
    writeFileSync(files.count, '');
    return {
      ...files,
      args: ['--token-command', 'echo run >> "$FENBS_TEST_COUNT"; cat "$FENBS_TEST_TOKEN"'],
      env: { FENBS_TEST_TOKEN: files.token, FENBS_TEST_COUNT: files.count },
      rotate: (next: string) => writeFileSync(files.token, `${next}\n`),
    };
  };

  /** One call answered: the command's first run is over, so a rotation after it is seen as one. */
  const warmUp = async (running: RunningBridge) => {
    running.send(call('warm-up'));
    expect((await running.reply('warm-up')).result).toEqual(okText('warm-up'));
  };

  describe('--token-command', () => {
    it('runs the command at start and sends its trimmed stdout as the bearer token', async () => {
      const { server } = await rotatingServer('command-token-first-1111');
      const command = tokenCommand('command-token-first-1111');
      const running = bridge(['--url', server.url.href, ...command.args], command.env);
      running.send(call('a'));
      expect((await running.reply('a')).result).toEqual(okText('a'));
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer command-token-first-1111']);
      expect(runsOf(command.count)).toBe(1);
    });

    // A 401 means the request was not processed (authorization §Error Handling), so it is sent again.
    it('runs the command again after a 401 when the server switched tokens, and the call succeeds with the new one', async () => {
      const rotating = await rotatingServer('rotation-token-one-2222');
      const command = tokenCommand('rotation-token-one-2222');
      const running = bridge(['--url', rotating.server.url.href, ...command.args], command.env);
      running.send(call('before'));
      expect((await running.reply('before')).result).toEqual(okText('before'));

      rotating.accept('rotation-token-two-3333');
      command.rotate('rotation-token-two-3333');
      running.send(call('after'));
      expect((await running.reply('after')).result).toEqual(okText('after'));
      expect(rotating.server.postsFor('after').map((r) => r.headers.authorization)).toEqual([
        'Bearer rotation-token-one-2222',
        'Bearer rotation-token-two-3333',
      ]);
      expect(runsOf(command.count)).toBe(2);
      // The next request goes with the new token at once.
      running.send(call('next'));
      expect((await running.reply('next')).result).toEqual(okText('next'));
      expect(rotating.server.postsFor('next').map((r) => r.headers.authorization)).toEqual(['Bearer rotation-token-two-3333']);
      expect(stdoutProblems(running.lines, ['before', 'after', 'next'])).toEqual([]);
    });

    it('renews once for requests refused together, and sends each of them once more', async () => {
      const rotating = await rotatingServer('shared-token-one-4444');
      const command = tokenCommand('shared-token-one-4444');
      const running = bridge(['--url', rotating.server.url.href, ...command.args], command.env);
      await warmUp(running);
      rotating.accept('shared-token-two-5555');
      command.rotate('shared-token-two-5555');
      for (const id of ['x', 'y', 'z']) running.send(call(id));
      for (const id of ['x', 'y', 'z']) expect((await running.reply(id)).result).toEqual(okText(id));
      for (const id of ['x', 'y', 'z']) expect(rotating.server.postsFor(id)).toHaveLength(2);
      // The start, then one renewal shared by the three refusals.
      expect(runsOf(command.count)).toBe(2);
    });

    it('sends a notification refused with 401 once more with the renewed token', async () => {
      const rotating = await rotatingServer('notify-token-one-6666');
      const command = tokenCommand('notify-token-one-6666');
      const running = bridge(['--url', rotating.server.url.href, ...command.args], command.env);
      await warmUp(running);
      rotating.accept('notify-token-two-7777');
      command.rotate('notify-token-two-7777');
      running.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
      const accepted = await rotating.server.waitForRequest(
        (r) => r.message?.method === 'notifications/roots/list_changed' && r.headers.authorization === 'Bearer notify-token-two-7777',
      );
      expect(accepted.headers.authorization).toBe('Bearer notify-token-two-7777');
      expect(rotating.server.requests.filter((r) => r.message?.method === 'notifications/roots/list_changed')).toHaveLength(2);
    });

    // RFC 6750 §3.1 insufficient_scope; a step-up gets a token with more scope (authorization §Scope Challenge Handling).
    it('renews after a 403 insufficient_scope and sends the request once more', async () => {
      const rotating = await rotatingServer('scope-token-narrow-8888', ({ res }) =>
        sendJson(res, 403, { error: 'insufficient_scope' }, { 'www-authenticate': 'Bearer error="insufficient_scope", scope="tasks:write"' }),
      );
      const command = tokenCommand('scope-token-narrow-8888');
      const running = bridge(['--url', rotating.server.url.href, ...command.args], command.env);
      await warmUp(running);
      rotating.accept('scope-token-wide-9999');
      command.rotate('scope-token-wide-9999');
      running.send(call('write'));
      expect((await running.reply('write')).result).toEqual(okText('write'));
      expect(rotating.server.postsFor('write')).toHaveLength(2);
    });

    // Every HTTP request carries the credential, GET and DELETE of the session too (authorization §Token Requirements).
    it('sends the current token on the session GET and DELETE as well, the renewed one after a renewal', async () => {
      let accepted = 'session-token-one-1414';
      const server = await serve({
        sessions: true,
        route: ({ req, res }) => {
          if (req.headers.authorization === `Bearer ${accepted}`) return false;
          sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' });
          return true;
        },
      });
      const command = tokenCommand('session-token-one-1414');
      const running = bridge(['--url', server.url.href, ...command.args], command.env);
      running.send(initializeRequest(1));
      await running.reply(1);
      running.send(initializedNotification);
      const listen = await server.waitForRequest((r) => r.method === 'GET');
      expect(listen.headers.authorization).toBe('Bearer session-token-one-1414');
      accepted = 'session-token-two-1515';
      command.rotate('session-token-two-1515');
      running.send(call('renewed'));
      expect((await running.reply('renewed')).result).toEqual(okText('renewed'));
      running.end();
      const ended = await server.waitForRequest((r) => r.method === 'DELETE');
      expect(ended.headers.authorization).toBe('Bearer session-token-two-1515');
      expect(await running.exitCode).toBe(0);
    });

    it('answers REMOTE_AUTH without a second send when the command prints the refused token again', async () => {
      const rotating = await rotatingServer('stale-token-one-1212');
      const command = tokenCommand('stale-token-one-1212');
      const running = bridge(['--url', rotating.server.url.href, ...command.args], command.env);
      rotating.accept('a-token-the-command-never-prints');
      running.send(call('stale'));
      const reply = await running.reply('stale');
      expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_AUTH', status: 401, hint: expect.stringMatching(/--token-command/) });
      expect(rotating.server.postsFor('stale')).toHaveLength(1);
      expect(runsOf(command.count)).toBe(2);
    });

    it('answers each request with the failure of a command that exits non-zero: its exit code and stderr, never a token', async () => {
      const { server } = await rotatingServer('never-printed-token-3434');
      const running = bridge(['--url', server.url.href, '--token-command', 'echo "vault is locked: run op signin" >&2; exit 3']);
      running.send(call('locked'));
      const reply = await running.reply('locked');
      expect(reply.error.message).toMatch(/--token-command exited with code 3: vault is locked: run op signin/);
      expect(reply.error.data).toMatchObject({
        bridgeCode: 'TOKEN_COMMAND_FAILED',
        exitCode: 3,
        stderr: 'vault is locked: run op signin',
        hint: expect.stringMatching(/terminal/),
      });
      // Sent without a token (the start failed), refused, the command tried again and failed again.
      expect(server.postsFor('locked').map((r) => r.headers.authorization)).toEqual([undefined]);
      await running.waitForLog(/--token-command exited with code 3/);
    });

    it('answers with an error that says so when the command prints nothing', async () => {
      const { server } = await rotatingServer('never-printed-token-5656');
      const running = bridge(['--url', server.url.href, '--token-command', 'true']);
      running.send(call('empty'));
      const reply = await running.reply('empty');
      expect(reply.error.message).toMatch(/--token-command printed nothing on stdout \(exit code 0\)/);
      expect(reply.error.data).toMatchObject({ bridgeCode: 'TOKEN_COMMAND_FAILED' });
    });

    // RFC 6750 §2.1: the token alone follows "Bearer "; "Bearer Bearer …" is no credential at all.
    it('answers each request with the refusal of a token printed with "Bearer " in front, never sends it, and runs the command again for the next request', async () => {
      const { server } = await rotatingServer('a-token-the-command-never-prints');
      const command = tokenCommand('Bearer prefixed-command-token-1616');
      const running = bridge(['--url', server.url.href, ...command.args], command.env);
      for (const id of ['first', 'second']) {
        running.send(call(id));
        const reply = await running.reply(id);
        expect(reply.error.message).toMatch(/--token-command printed a token that contains a space or a tab/);
        expect(reply.error.data).toMatchObject({ bridgeCode: 'TOKEN_COMMAND_FAILED', hint: expect.stringMatching(/without "Bearer " in front/) });
      }
      expect(server.requests.map((r) => r.headers.authorization)).toEqual([undefined, undefined]);
      // The start, then one run for each refused request: a bad output is never kept.
      expect(runsOf(command.count)).toBe(3);
      expect(running.lines.join('\n') + running.stderr()).not.toContain('prefixed-command-token-1616');
    });

    it('answers promptly with the token of a command whose background job holds stdout open, and stops that job', async () => {
      const { server } = await rotatingServer('pipe-held-token-1717');
      const pid = join(mkdtempSync(join(tmpdir(), 'fenbs-token-pid-')), 'pid');
      const running = bridge(['--url', server.url.href, '--token-command', 'sleep 120 & echo $! > "$FENBS_TEST_PID"; echo pipe-held-token-1717'], {
        FENBS_TEST_PID: pid,
      });
      running.send(call('held'));
      expect((await running.reply('held')).result).toEqual(okText('held'));
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer pipe-held-token-1717']);
      await waitUntilGone(pidIn(pid));
    });

    it('never shows the token a failing command printed on stdout, in its replies or its log', async () => {
      const { server } = await rotatingServer('a-token-the-command-never-prints');
      const token = 'failing-printed-token-1818';
      const running = bridge(['--url', server.url.href, '--token-command', `echo ${token}; echo "token ${token} expired" >&2; exit 1`, '--log-level', 'debug']);
      running.send(call('failing'));
      const reply = await running.reply('failing');
      expect(reply.error.message).toBe('--token-command exited with code 1: token [REDACTED] expired');
      expect(reply.error.data).toMatchObject({ bridgeCode: 'TOKEN_COMMAND_FAILED', exitCode: 1, stderr: 'token [REDACTED] expired' });
      await running.waitForLog(/--token-command exited with code 1: token \[REDACTED\] expired/);
      expect(running.lines.join('\n')).not.toContain(token);
      expect(running.stderr()).not.toContain(token);
    });

    if (mode.name === 'spawned') {
      it('kills the process group of a token command still running when the bridge is stopped', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'fenbs-token-pid-'));
        const pid = join(dir, 'pid');
        const running = bridge(
          [
            '--url',
            'http://127.0.0.1:9/mcp',
            '--token-command',
            'sleep 120 & echo $! > "$FENBS_TEST_PID.tmp"; mv "$FENBS_TEST_PID.tmp" "$FENBS_TEST_PID"; wait',
          ],
          { FENBS_TEST_PID: pid },
        );
        // Polled: the command writes the file without telling the bridge or the test.
        await vi.waitFor(() => pidIn(pid), { timeout: 10_000, interval: 20 });
        running.stop('SIGTERM');
        await running.exitCode;
        await waitUntilGone(pidIn(pid));
      });
    }

    it('masks the command token on stdout and in the log, also where the server echoes it', async () => {
      const token = 'echoed-command-token-7878';
      const server = await serve({
        route: ({ res, message, req }) => {
          if (message?.method !== 'tools/call') return false;
          // The server echoes the credential it got, in the result and in an error body it logs.
          if (message.id === 'echo')
            sendJson(res, 200, result(message.id, { content: [{ type: 'text', text: `you sent ${String(req.headers.authorization)}` }] }));
          else sendJson(res, 500, `internal failure for ${String(req.headers.authorization)}`, { 'content-type': 'text/plain' });
          return true;
        },
      });
      const command = tokenCommand(token);
      const running = bridge(['--url', server.url.href, ...command.args, '--log-level', 'debug'], command.env);
      running.send(call('echo'));
      expect((await running.reply('echo')).result.content[0].text).toBe('you sent Bearer [REDACTED]');
      running.send(call('fail'));
      expect((await running.reply('fail')).error.data.bodyExcerpt).toBe('internal failure for Bearer [REDACTED]');
      await running.waitForLog(/the server answered tools\/call with HTTP 500/);
      expect(running.lines.join('\n')).not.toContain(token);
      expect(running.stderr()).not.toContain(token);
    });
  });

  describe('header secrets from the environment', () => {
    it('expands ${VAR} in -H from the environment and masks the value wherever the server echoes it', async () => {
      const key = 'api-key-from-env-9090';
      const server = await serve({
        route: ({ res, message, req }) => {
          if (message?.method !== 'tools/call') return false;
          sendJson(res, 200, result(message.id, { content: [{ type: 'text', text: `key ${String(req.headers['x-api-key'])}` }] }));
          return true;
        },
      });
      const running = bridge(['--url', server.url.href, '-H', 'X-Api-Key: ${MY_API_KEY}', '--log-level', 'debug'], { MY_API_KEY: key });
      running.send(call('k'));
      expect((await running.reply('k')).result.content[0].text).toBe('key [REDACTED]');
      expect(server.requests[0]!.headers['x-api-key']).toBe(key);
      expect(running.stderr()).not.toContain(key);
    });

    it('sends -H Authorization with any scheme when its credential comes from the environment', async () => {
      const server = await serve();
      const running = bridge(['--url', server.url.href, '-H', 'Authorization: token ${GH_TOKEN}', '--log-level', 'info'], {
        GH_TOKEN: 'gh-token-from-env-1313',
      });
      running.send(call('gh'));
      expect((await running.reply('gh')).result).toEqual(okText('gh'));
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(['token gh-token-from-env-1313']);
      expect(running.stderr()).not.toContain('gh-token-from-env-1313');
    });
  });
}
