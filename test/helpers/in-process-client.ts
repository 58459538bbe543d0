// The official v2 client talking to an in-process bridge: a stdio-like Transport over its PassThrough streams.

import { Client, ReadBuffer, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { startInProcessBridge, type InProcessBridge } from './in-process-bridge.js';

/** What StdioClientTransport does over a child's pipes, over the bridge's stdin/stdout streams instead. */
class InProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #buffer = new ReadBuffer();

  constructor(readonly bridge: InProcessBridge) {}

  start(): Promise<void> {
    this.bridge.output.on('data', (chunk: Buffer | string) => {
      this.#buffer.append(Buffer.from(chunk));
      for (let message = this.#buffer.readMessage(); message !== null; message = this.#buffer.readMessage()) this.onmessage?.(message);
    });
    this.bridge.output.on('end', () => this.onclose?.());
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    this.bridge.sendRaw(serializeMessage(message));
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.bridge.end();
    await this.bridge.exited;
  }
}

export interface InProcessClient {
  client: Client;
  bridge: InProcessBridge;
  /** Errors the client reported outside any call (e.g. a response for an id it never sent). */
  errors: Error[];
  close(): Promise<void>;
}

/** Connects a v2 client through an in-process bridge to `url`; version negotiation ('auto') probes server/discover. */
export async function connectInProcess(url: string, token: string, bridgeArgs: string[] = []): Promise<InProcessClient> {
  const bridge = startInProcessBridge(['--url', url, ...bridgeArgs], { FENBS_TOKEN: token });
  const client = new Client({ name: 'fenbs-mcp-tests', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const errors: Error[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(new InProcessTransport(bridge));
  return { client, bridge, errors, close: () => client.close() };
}
