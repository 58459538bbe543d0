// The SDK v1 client gets the same answers from the SDK v1 server through the bridge as it does directly.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
  type LoggingMessageNotification,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsOf, startV1Server, type V1Server } from '../helpers/sdk-v1-full-server.js';
import { BIN, initializedNotification, initializeRequest, spawnBridge } from '../helpers/spawn-bridge.js';

const ROOTS = [{ uri: 'file:///work/project', name: 'project' }];

/** What the client saw: every result, every server→client request, every notification. */
type Workload = Awaited<ReturnType<typeof runWorkload>>;

function createClient(asked: { method: string; params: unknown }[], logs: LoggingMessageNotification['params'][], onLog: () => void): Client {
  const client = new Client(
    { name: 'parity-client', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push({ method: request.method, params: request.params });
    return { action: 'accept', content: { color: 'green' } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, (request) => {
    asked.push({ method: request.method, params: request.params });
    const prompt = request.params.messages[0]?.content;
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `echo(${prompt !== undefined && 'text' in prompt ? prompt.text : ''})` } };
  });
  client.setRequestHandler(ListRootsRequestSchema, (request) => {
    asked.push({ method: request.method, params: request.params });
    return { roots: ROOTS };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
    onLog();
  });
  return client;
}

/** One scripted session: every feature the acceptance names, in a fixed order. */
async function runWorkload(server: V1Server, transport: Transport) {
  const asked: { method: string; params: unknown }[] = [];
  const logs: LoggingMessageNotification['params'][] = [];
  let logsArrived: () => void = () => undefined;
  const threeLogs = new Promise<void>((resolve) => (logsArrived = resolve));
  const client = createClient(asked, logs, () => logs.length === 3 && logsArrived());
  const errors: string[] = [];
  client.onerror = (error) => errors.push(error.message);
  await client.connect(transport);
  try {
    // The listen stream is open (its 200 has gone out) before anything is sent on it.
    await server.waitFor((e) => e.ev === 'headers' && e.http === 'GET' && e.status === 200);
    // Recorded as notifications, not through `onprogress`: the v1 client runs notification handlers
    // a microtask late, so progress read in the same stdin chunk as the result is dropped as
    // "unknown token" (typescript-sdk#2580). The bridge's ordering is checked on its raw stdout below.
    const progress: Progress[] = [];
    client.setNotificationHandler(ProgressNotificationSchema, ({ params: { progressToken: _token, ...rest } }) => void progress.push(rest));
    const tools = {
      list: await client.listTools(),
      echo: await client.callTool({ name: 'echo', arguments: { text: 'hi there' } }),
      progress: await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, { onprogress: () => undefined }),
      ask: await client.callTool({ name: 'ask', arguments: {} }),
      roots: await client.callTool({ name: 'roots', arguments: {} }),
      announce: await client.callTool({ name: 'announce', arguments: {} }),
      unknown: await client.callTool({ name: 'no-such-tool', arguments: {} }),
    };
    await client.setLoggingLevel('info');
    const logged = await client.callTool({ name: 'log', arguments: {} });
    await threeLogs; // two of them come on the listen stream, maybe after the result
    const resources = {
      list: await client.listResources(),
      templates: await client.listResourceTemplates(),
      text: await client.readResource({ uri: 'memo://note' }),
      blob: await client.readResource({ uri: 'memo://bytes' }),
      templated: await client.readResource({ uri: 'memo://items/apple' }),
    };
    const prompts = {
      list: await client.listPrompts(),
      get: await client.getPrompt({ name: 'greet', arguments: { name: 'Ada', tone: 'warm' } }),
    };
    const completions = {
      prompt: await client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'A' } }),
      template: await client.complete({ ref: { type: 'ref/resource', uri: 'memo://items/{name}' }, argument: { name: 'name', value: 'ap' } }),
    };
    const byText = (a: { data?: unknown }, b: { data?: unknown }) => String(a.data).localeCompare(String(b.data));
    return {
      server: { info: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() },
      tools,
      progress,
      asked,
      logging: { result: logged, messages: [...logs].sort(byText) },
      resources,
      prompts,
      completions,
      errors: [...errors], // before close(), whose aborts the direct transport reports
    };
  } finally {
    await client.close();
  }
}

/** The bridge as a desktop client starts it: the built bin, over pipes. */
function viaBridge(server: V1Server): Transport {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, '--url', server.url],
    env: { PATH: process.env.PATH ?? '', FENBS_MCP_LOG_LEVEL: 'warn' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', () => undefined); // drained, so logs can never block the bridge
  return transport;
}

describe('the SDK v1 client against the SDK v1 server, through the bridge and directly', () => {
  let directServer: V1Server;
  let bridgedServer: V1Server;
  let direct: Workload;
  let bridged: Workload;

  beforeAll(async () => {
    [directServer, bridgedServer] = await Promise.all([startV1Server(), startV1Server()]);
    direct = await runWorkload(directServer, new StreamableHTTPClientTransport(new URL(directServer.url)));
    bridged = await runWorkload(bridgedServer, viaBridge(bridgedServer));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([directServer?.close(), bridgedServer?.close()]);
  });

  it('completes the handshake with the same server info and capabilities', () => {
    expect(bridged.server).toEqual(direct.server);
    expect(direct.server.info).toEqual({ name: 'sdk-v1-full', version: '1.0.0' });
  });

  it('lists and calls tools with the same results, errors included', () => {
    expect(bridged.tools).toEqual(direct.tools);
    expect(direct.tools.echo.content).toEqual([{ type: 'text', text: 'hi there' }]);
    expect(direct.tools.unknown.isError).toBe(true);
  });

  it('delivers the same progress notifications while a tool runs', () => {
    expect(bridged.progress).toEqual(direct.progress);
    expect(direct.progress.map((p) => p.progress)).toEqual([1, 2, 3]);
  });

  it('passes the server’s elicitation, sampling and roots requests to the client and its answers back', () => {
    expect(bridged.asked).toEqual(direct.asked);
    expect(direct.asked.map((a) => a.method)).toEqual(['elicitation/create', 'sampling/createMessage', 'roots/list']);
    expect(direct.tools.ask.content).toEqual([{ type: 'text', text: 'accept:green -> test-model: echo(Name a green fruit)' }]);
    expect(direct.tools.roots.content).toEqual([{ type: 'text', text: JSON.stringify(ROOTS) }]);
  });

  it('answers a ping the server sends on the listen stream', () => {
    expect(bridged.tools.announce).toEqual(direct.tools.announce);
    expect(direct.tools.announce.content).toEqual([{ type: 'text', text: 'announced' }]);
  });

  it('delivers the same log messages, filtered by logging/setLevel, from the request and listen streams', () => {
    expect(bridged.logging).toEqual(direct.logging);
    expect(direct.logging.messages.map((m) => `${m.logger}:${m.level}`)).toEqual(['listen:error', 'listen:info', 'request:info']);
  });

  it('reads text, blob and templated resources identically', () => {
    expect(bridged.resources).toEqual(direct.resources);
    expect(direct.resources.blob.contents[0]).toMatchObject({ blob: Buffer.from([0, 1, 2, 250, 251, 255]).toString('base64') });
  });

  it('lists and renders prompts identically', () => {
    expect(bridged.prompts).toEqual(direct.prompts);
    expect(direct.prompts.get.messages).toHaveLength(1);
  });

  it('completes prompt arguments and resource template variables identically', () => {
    expect(bridged.completions).toEqual(direct.completions);
    expect(direct.completions.prompt.completion.values).toEqual(['Ada', 'Alan']);
    expect(direct.completions.template.completion.values).toEqual(['apple', 'apricot']);
  });

  it('raises no client-side errors either way', () => {
    expect(bridged.errors).toEqual([]);
    expect(direct.errors).toEqual([]);
  });

  it('posts the client’s answers to server requests with the session headers, and the server accepts them with 202', () => {
    const answers = requestsOf(bridgedServer, 'POST').filter((e) => e.body?.method === undefined && e.body?.id !== undefined);
    const session = bridgedServer.log.find((e) => e.session !== undefined)?.session;
    expect(session).toBeDefined();
    expect(answers).toHaveLength(4); // elicitation, sampling, roots, ping
    for (const answer of answers) {
      expect(answer.headers).toMatchObject({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
      const status = bridgedServer.log.find((e) => e.ev === 'response' && e.http === 'POST' && e.id === answer.id && e.rpc === undefined)?.status;
      expect(status).toBe(202);
    }
  });
});

describe('what the bridge writes to stdout for the SDK v1 server', () => {
  it('writes a tool’s progress notifications as they arrive, each before the result', async () => {
    const server = await startV1Server();
    const bridge = spawnBridge(['--url', server.url]);
    try {
      bridge.send(initializeRequest(1, '2025-11-25'));
      await bridge.reply(1);
      bridge.send(initializedNotification);
      bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', arguments: { ms: 400 }, _meta: { progressToken: 'slow' } } });
      await bridge.waitFor((m) => m.method === 'notifications/progress');
      expect(bridge.lines.some((line) => JSON.parse(line).id === 2)).toBe(false); // the tool is still running
      await bridge.reply(2);
      bridge.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'progress', arguments: { steps: 3 }, _meta: { progressToken: 'steps' } } });
      await bridge.reply(3);
      const forCall = bridge.lines.map((line) => JSON.parse(line)).filter((m) => m.id === 3 || m.params?.progressToken === 'steps');
      expect(forCall.map((m) => m.params?.progress ?? 'result')).toEqual([1, 2, 3, 'result']);
    } finally {
      bridge.kill();
      await server.close();
    }
  });
});
