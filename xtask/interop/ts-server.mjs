// A server built with the TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package-lock.json), for modelctx's `conformance-client --interop` to drive.
// `cargo xtask interop` copies this file next to the installed node_modules and runs:
//
//   node ts-server.mjs http <port>   streamable HTTP at http://127.0.0.1:<port>/mcp
//   node ts-server.mjs sse <port>    only the legacy HTTP+SSE transport (2024-11-05,
//     `SSEServerTransport`): GET http://127.0.0.1:<port>/sse opens a session's event
//     stream, whose `endpoint` event names /messages?sessionId=<id> to POST to; a POST
//     to /sse (a streamable HTTP client's `initialize`) is refused with 405
//   node ts-server.mjs stdio         stdio
//
// Fixtures (server-fixtures.mjs): tools `add` (progress and a log message), `ask_llm`
// (sampling) and `ask_user` (form elicitation); resource `info://about`; prompt `greet`
// whose `name` completes.
// Tasks (2025-11-25, the SDK's experimental task store): `wait_for_gate` may run as a
// task (`execution.taskSupport: optional`) and finishes once `open_gate` opens its gate,
// so the caller decides when a task ends and nothing depends on timing. `side_channel_task`
// must run as a task and asks the client for a name through the task's side channel
// (the request waits in the SDK's task message queue for a tasks/result to carry it).
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { sessionful } from './ts-http.mjs';
import * as fixture from './server-fixtures.mjs';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

// The gates of `wait_for_gate`, by name, shared by every session of the process.
const gates = new Map();
const gate = (name) => {
  let g = gates.get(name);
  if (!g) {
    let open;
    g = { opened: new Promise((resolve) => (open = resolve)), open };
    gates.set(name, g);
  }
  return g;
};

function buildServer() {
  const server = new Server(
    { name: 'ts-interop-server', version: '1.0.0' },
    {
      capabilities: {
        tools: {},
        resources: {},
        prompts: {},
        completions: {},
        logging: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      // Answers tasks/get, tasks/result, tasks/list and tasks/cancel.
      taskStore: new InMemoryTaskStore(),
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      ...fixture.TOOLS,
      {
        name: 'wait_for_gate',
        description: 'Waits until open_gate opens the named gate (may run as a task)',
        inputSchema: fixture.object({ gate: { type: 'string' } }, ['gate']),
        execution: { taskSupport: 'optional' },
      },
      {
        name: 'side_channel_task',
        description: 'Asks the user for a name from within a task',
        inputSchema: fixture.object({ message: { type: 'string' } }, ['message']),
        execution: { taskSupport: 'required' },
      },
      {
        name: 'open_gate',
        description: 'Opens the named gate',
        inputSchema: fixture.object({ gate: { type: 'string' } }, ['gate']),
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'add': {
        const token = request.params._meta?.progressToken;
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', logger: 'add', data: `adding ${args.a} and ${args.b}` },
        });
        if (token !== undefined) {
          for (const progress of [1, 2]) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress, total: 2 },
            });
          }
        }
        return fixture.text(String(args.a + args.b));
      }
      case 'ask_llm': {
        const answer = await extra.sendRequest(
          { method: 'sampling/createMessage', params: fixture.askLlmParams(args) },
          CreateMessageResultSchema,
        );
        return fixture.askLlmResult(answer);
      }
      case 'ask_user': {
        const answer = await extra.sendRequest(
          { method: 'elicitation/create', params: fixture.askUserParams(args) },
          ElicitResultSchema,
        );
        return fixture.elicitationResult(answer);
      }
      case 'wait_for_gate': {
        const work = gate(args.gate).opened.then(() => fixture.text(`gate ${args.gate} opened`));
        const task = request.params.task;
        if (!task) {
          return await work;
        }
        const created = await extra.taskStore.createTask({ ttl: task.ttl, pollInterval: 100 });
        // The work goes on after the answer; a task cancelled meanwhile stays cancelled
        // (the store refuses a result for a terminal task).
        work
          .then((result) => extra.taskStore.storeTaskResult(created.taskId, 'completed', result))
          .catch((e) => console.error(`ts-server: task ${created.taskId}: ${e.message}`));
        return { task: created };
      }
      case 'side_channel_task': {
        const task = request.params.task;
        if (!task) {
          throw new McpError(ErrorCode.MethodNotFound, 'side_channel_task must be called as a task');
        }
        const created = await extra.taskStore.createTask({ ttl: task.ttl, pollInterval: 100 });
        // Queued for the next tasks/result (the task is input_required meanwhile).
        extra
          .sendRequest(
            {
              method: 'elicitation/create',
              params: {
                message: args.message,
                requestedSchema: fixture.object({ name: { type: 'string' } }, ['name']),
              },
            },
            ElicitResultSchema,
            { relatedTask: { taskId: created.taskId } },
          )
          .then((answer) =>
            extra.taskStore.storeTaskResult(created.taskId, 'completed', fixture.elicitationResult(answer)),
          )
          .catch((e) => console.error(`ts-server: task ${created.taskId}: ${e.message}`));
        return { task: created };
      }
      case 'open_gate':
        gate(args.gate).open();
        return fixture.text(`opened ${args.gate}`);
      default:
        return fixture.unknownTool(request);
    }
  });
  server.setRequestHandler(ListResourcesRequestSchema, fixture.listResources);
  server.setRequestHandler(ReadResourceRequestSchema, fixture.readResource);
  server.setRequestHandler(ListPromptsRequestSchema, fixture.listPrompts);
  server.setRequestHandler(GetPromptRequestSchema, fixture.getPrompt);
  server.setRequestHandler(CompleteRequestSchema, fixture.complete);
  return server;
}

const [mode, port] = process.argv.slice(2);
if (mode === 'stdio') {
  await buildServer().connect(new StdioServerTransport());
} else if (mode === 'http' && port) {
  const httpServer = http.createServer(sessionful(buildServer));
  httpServer.listen(Number(port), '127.0.0.1', () => {
    console.error(`ts-server: listening on http://127.0.0.1:${port}/mcp`);
  });
} else if (mode === 'sse' && port) {
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sessions.set(transport.sessionId, transport);
      res.on('close', () => sessions.delete(transport.sessionId));
      // Starts the stream and sends the `endpoint` event.
      await buildServer().connect(transport);
    } else if (url.pathname === '/messages' && req.method === 'POST') {
      const transport = sessions.get(url.searchParams.get('sessionId'));
      if (!transport) {
        res.writeHead(404).end('no such session');
        return;
      }
      await transport.handlePostMessage(req, res);
    } else {
      res.writeHead(url.pathname === '/sse' ? 405 : 404).end();
    }
  });
  httpServer.listen(Number(port), '127.0.0.1', () => {
    console.error(`ts-server: legacy SSE endpoint http://127.0.0.1:${port}/sse`);
  });
} else {
  console.error('usage: ts-server.mjs http <port> | sse <port> | stdio');
  process.exit(2);
}
