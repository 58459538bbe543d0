// Shared suite, TLS client authentication: a node:https server that demands a client certificate, certificates made at test time.

import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createClientCertificates,
  createTestCertificates,
  serversForFile,
  stdoutProblems,
  type ClientCertificates,
  type McpServer,
  type TestCertificates,
} from '../helpers/hardening-servers.js';
import type { BridgeMode, RunningBridge } from '../helpers/bridge-mode.js';

const call = (id: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: id, arguments: {} } });

/** Defines the suite against bridges started by `mode`. */
export function defineClientCertificateSuite(mode: BridgeMode): void {
  const { serve, track } = serversForFile();
  let certs: TestCertificates;
  let client: ClientCertificates;
  let server: McpServer;
  beforeAll(async () => {
    certs = createTestCertificates();
    client = createClientCertificates(certs);
    // rejectUnauthorized: a client without a certificate, or with one the CA did not issue, is refused in the handshake.
    server = await serve({ tls: { key: certs.key, cert: certs.cert, ca: readFileSync(certs.caFile, 'utf8'), requestCert: true, rejectUnauthorized: true } });
  });
  const bridge = (args: string[], env: Record<string, string> = {}): RunningBridge => {
    const spawned = mode.start(['--url', server.url.href, '--ca-file', certs.caFile, ...args], env);
    track(() => spawned.kill());
    return spawned;
  };
  const ask = async (args: string[], env: Record<string, string> = {}): Promise<{ reply: any; running: RunningBridge }> => {
    const running = bridge(args, env);
    running.send(call('q'));
    const reply = await running.reply('q', 15_000);
    expect(stdoutProblems(running.lines, ['q'])).toEqual([]);
    return { reply, running };
  };

  describe('a server that demands a TLS client certificate', () => {
    it('answers through it with --client-cert and a plain --client-key', async () => {
      const { reply } = await ask(['--client-cert', client.certFile, '--client-key', client.keyFile]);
      expect(reply.result).toEqual({ content: [{ type: 'text', text: 'ok q' }] });
    });

    it('sends the whole chain of --client-cert: a leaf from an intermediate CA is accepted with the intermediate in the file, not without it', async () => {
      const { reply } = await ask(['--client-cert', client.chainCertFile, '--client-key', client.chainKeyFile]);
      expect(reply.result).toEqual({ content: [{ type: 'text', text: 'ok q' }] });
      const leafOnly = await ask(['--client-cert', client.chainLeafOnlyFile, '--client-key', client.chainKeyFile]);
      expect(leafOnly.reply.error).toBeDefined();
    });

    it('answers through it with an encrypted key and its passphrase in FENBS_MCP_CLIENT_KEY_PASSPHRASE, which appears in no output at trace', async () => {
      const { reply, running } = await ask(['--client-cert', client.certFile, '--client-key', client.encryptedKeyFile, '--log-level', 'trace'], {
        FENBS_MCP_CLIENT_KEY_PASSPHRASE: client.passphrase,
      });
      expect(reply.result).toEqual({ content: [{ type: 'text', text: 'ok q' }] });
      const key = readFileSync(client.keyFile, 'utf8').split('\n')[1]!;
      const output = `${running.lines.join('\n')}\n${running.stderr()}`;
      expect(output).not.toContain(client.passphrase);
      expect(output).not.toContain(key);
    });

    it('without a client certificate, answers with an error naming TLS client authentication and the options, not a lost connection', async () => {
      const { reply } = await ask([]);
      expect(reply.error.data).toMatchObject({
        bridgeCode: 'REMOTE_TLS',
        hint: expect.stringMatching(/requires a TLS client certificate: pass --client-cert .* and --client-key/),
      });
      expect(reply.error.message).toMatch(/requires TLS client authentication/);
    });

    // node:https checks the certificate itself and closes the connection without a TLS alert, so
    // all the bridge sees is the close; the hint names the certificate it sent.
    it('with a certificate from a CA the server does not trust, answers with an error whose hint names TLS client authentication and the file', async () => {
      const { reply } = await ask(['--client-cert', client.foreignCertFile, '--client-key', client.foreignKeyFile]);
      expect(reply.error.data.hint).toContain(`it may have refused the one in --client-cert ${client.foreignCertFile} (TLS client authentication)`);
    });
  });
}
