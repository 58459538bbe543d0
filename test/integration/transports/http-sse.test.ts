// HttpSseTransport on its own against a loopback server: the event stream is not read further while stdout has no room.

import type { ServerResponse } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import type { Credential } from '../../../src/core/credential.js';
import type { JsonObject } from '../../../src/core/json-rpc.js';
import { createDispatcher } from '../../../src/http/dispatcher.js';
import { Endpoint } from '../../../src/http/endpoint.js';
import { HttpSseTransport } from '../../../src/transports/http-sse.js';
import { createRedactor } from '../../../src/logging/redactor.js';
import { InFlight } from '../../../src/pipeline/in-flight.js';
import { Router } from '../../../src/pipeline/router.js';
import { startMcpServer } from '../../helpers/hardening-servers.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const none: Credential = { source: 'none', authorization: () => undefined, renew: () => Promise.resolve(false) };

function until(done: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const check = () => (done() ? resolve() : setTimeout(check, 5));
    check();
  });
}

describe('HttpSseTransport', () => {
  it('reads no further event while stdout has no room, and delivers every event in order once it has', async () => {
    let stream: ServerResponse | undefined;
    const server = await startMcpServer({
      route: ({ req, res }) => {
        if (req.method !== 'GET') return false;
        stream = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: endpoint\ndata: /messages\n\n');
        return true;
      },
    });
    cleanups.push(() => server.close());
    const config = createConfig({ options: { url: server.url.href, transport: 'sse' }, env: {}, readTextFile: () => '' });
    const dispatcher = createDispatcher({ connectTimeoutMs: 5_000, env: {} });
    cleanups.push(() => dispatcher.close());
    const logger = pino({ level: 'silent' });
    const written: JsonObject[] = [];
    const write = (message: JsonObject) => (written.push(message), Promise.resolve(true));
    const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
    let full = false;
    let waiting = 0;
    let makeRoom: () => void = () => undefined;
    const room = () => {
      if (!full) return undefined;
      waiting++;
      return new Promise<void>((resolve) => (makeRoom = resolve));
    };
    const sse = new HttpSseTransport({
      config,
      endpoint: new Endpoint(config, dispatcher, {}, none),
      sink: new Router({ inFlight, write, logger }),
      room,
      logger,
      redact: createRedactor([]),
    });
    cleanups.push(() => sse.close());
    expect((await sse.connect()).pathname).toBe('/messages');

    full = true;
    const events = [1, 2, 3].map((n) => `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"n":${n}}}\n\n`);
    stream!.write(events.join(''));
    // The reader holds the chunk and waits for room: nothing of it reached stdout.
    await until(() => waiting > 0);
    expect(written).toEqual([]);

    full = false;
    makeRoom();
    await until(() => written.length === 3);
    expect(written.map((message) => (message.params as { n: number }).n)).toEqual([1, 2, 3]);
  });
});
