// In-process: doctor against the SDK v1 HTTP+SSE server names the transport it found, and recognises an /sse URL given with --transport streamable-http.

import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { runDoctor, type DoctorReport } from '../../../src/doctor/doctor.js';
import { startSdkV1SseServer } from '../../helpers/sdk-v1-sse-server.js';
import { startSdkV1Server } from '../../helpers/sdk-v1-server.js';

const token = `tok-${randomUUID()}`;
const env = { FENBS_TOKEN: token };
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function doctor(options: Record<string, unknown>): Promise<DoctorReport> {
  return runDoctor(createConfig({ options, env, readTextFile: () => '' }), env);
}
const check = (report: DoctorReport, name: string) => report.checks.find((c) => c.name === name);

describe('doctor and the HTTP+SSE transport (2024-11-05)', () => {
  it('falls back from an /sse URL as the bridge does and names the transport it found', async () => {
    const server = await startSdkV1SseServer({ layout: 'sse', token });
    cleanups.push(() => server.close());
    const report = await doctor({ url: server.url });
    expect(report).toMatchObject({ ok: true, transport: 'sse', revision: '2024-11-05' });
    expect(check(report, 'transport')!.detail).toMatch(
      /^HTTP\+SSE \(2024-11-05\): event stream at http:\/\/127\.0\.0\.1:\d+\/sse, messages posted to http:\/\/127\.0\.0\.1:\d+\/messages\?sessionId=\*\*\*$/,
    );
    expect(check(report, 'protocol')!.detail).toMatch(/^2024-11-05 \(initialize handshake over HTTP\+SSE\); server fenbs-mcp-test-v1-sse/);
    expect(check(report, 'tools')!.detail).toBe('4 tools listed');
    // The token went on the GET and the initialize the server answered over the stream: verified.
    expect(check(report, 'token')).toMatchObject({ ok: true, detail: 'accepted (from env FENBS_TOKEN): the server answered initialize over HTTP+SSE' });
    expect(check(report, 'token')!.checked).toBeUndefined();
  });

  it('with --transport sse opens the stream without a POST', async () => {
    const server = await startSdkV1SseServer({ layout: 'base', token });
    cleanups.push(() => server.close());
    const report = await doctor({ url: server.url, transport: 'sse' });
    expect(report).toMatchObject({ ok: true, transport: 'sse' });
    expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/' });
    expect(server.requests.filter((r) => r.method === 'POST' && r.path === '/')).toEqual([]);
  });

  it('names Streamable HTTP for a server that takes the POST', async () => {
    const server = await startSdkV1Server({ mode: 'json', token });
    cleanups.push(() => server.close());
    const report = await doctor({ url: server.url });
    expect(report).toMatchObject({ ok: true, transport: 'streamable-http' });
    expect(check(report, 'protocol')!.detail).toMatch(/; transport Streamable HTTP$/);
    expect(server.requests.filter((r) => r.method === 'GET')).toEqual([]);
  });

  it('recognises an /sse URL given with --transport streamable-http, and says how to reach it', async () => {
    const server = await startSdkV1SseServer({ layout: 'sse', token });
    cleanups.push(() => server.close());
    const report = await doctor({ url: server.url, transport: 'streamable-http' });
    expect(report.ok).toBe(false);
    expect(check(report, 'protocol')).toMatchObject({
      ok: false,
      hint: expect.stringMatching(
        /looks like an HTTP\+SSE \(2024-11-05\) URL.*--transport streamable-http does not try that transport: drop --transport .* or pass --transport sse/,
      ),
    });
    expect(server.requests.filter((r) => r.method === 'GET')).toEqual([]);
  });
});
