// The TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in package-lock.json)
// driving modelctx's `conformance-server` example. `cargo xtask interop` copies this file
// next to the installed node_modules and runs it over each transport:
//
//   node ts-client.mjs http <url>            streamable HTTP
//   node ts-client.mjs sse <url>             the legacy HTTP+SSE transport (2024-11-05,
//     `SSEClientTransport`; the URL of the event stream)
//   node ts-client.mjs stdio <server binary> [args...]  stdio (the binary is run with the
//     given args, --stdio when there are none)
//   node ts-client.mjs --tasks http|stdio ...  the tasks flow (protocol 2025-11-25) instead:
//     `wait_for_gate` called as a task with the SDK's experimental task API, followed
//     from working to completed once `open_gate` opens its gate, its result from
//     tasks/result, another one cancelled, one of `side_channel_task` whose elicitation
//     travels inside tasks/result, and the tasks listed; the server's
//     notifications/tasks/status must report the completion, the cancellation and the
//     wait for input
//
// Every step asserts on the result; the exit status is non-zero on the first mismatch.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { answerServerRequests, assertConformanceServer, clientTransport, conformanceSteps, text } from './conformance-steps.mjs';

const argv = process.argv.slice(2);
const tasks = argv[0] === '--tasks';
const [mode, target, ...extra] = tasks ? argv.slice(1) : argv;
if (!['http', 'sse', 'stdio'].includes(mode) || !target) {
  console.error('usage: ts-client.mjs [--tasks] (http <url> | sse <url> | stdio <server binary> [args...])');
  process.exit(2);
}

const client = new Client(
  { name: 'ts-interop-client', version: '1.0.0' },
  { capabilities: { sampling: {}, elicitation: { form: {} } } },
);

// Answers to the server's own requests, recorded so the test can check they arrived.
const { asked, logs } = answerServerRequests(
  client,
  {
    sampling: CreateMessageRequestSchema,
    elicitation: ElicitRequestSchema,
    logging: LoggingMessageNotificationSchema,
  },
  'ts-test-model',
);
// notifications/tasks/status, by task id and status; `notified` waits (bounded) for one.
const told = new Set();
const telling = new Map();
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  const key = `${n.params.taskId} ${n.params.status}`;
  told.add(key);
  telling.get(key)?.();
});
const notified = (taskId, status) =>
  new Promise((resolve, reject) => {
    const key = `${taskId} ${status}`;
    if (told.has(key)) return resolve();
    const timer = setTimeout(() => reject(new Error(`no notifications/tasks/status ${key}`)), 20000);
    telling.set(key, () => {
      clearTimeout(timer);
      resolve();
    });
  });

const transport = clientTransport(mode, target, extra, {
  StreamableHTTPClientTransport,
  SSEClientTransport,
  StdioClientTransport,
});

// v1 has no getter for the negotiated version; it hands it to the transport once the
// handshake is done (stdio has no such hook, so give it one).
let negotiated;
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  negotiated = version;
  setProtocolVersion?.(version);
};

await client.connect(transport);
console.log(`negotiated protocol version: ${negotiated}`);
const steps = [];
const step = async (name, f) => {
  await f();
  steps.push(name);
};

await step('initialize', async () => assertConformanceServer(client));

if (tasks) {
  await taskSteps();
  await client.close();
  console.log(`ts-client (${mode}, tasks): ${steps.length} steps passed: ${steps.join(', ')}`);
  process.exit(0);
}

async function taskSteps() {
  const invalidParams = (e) => e.code === -32602;
  const waitFor = (gate) => ({ name: 'wait_for_gate', arguments: { gate } });
  const relatedTask = (result) => result._meta?.[RELATED_TASK_META_KEY]?.taskId;
  const ids = {};
  // Gates are the server process's: names of this run only.
  const run = randomUUID();
  const gates = { first: `first-${run}`, second: `second-${run}`, never: `never-${run}` };

  await step('tasks capability', async () => {
    const caps = client.getServerCapabilities().tasks;
    assert.ok(caps?.list && caps?.cancel && caps?.requests?.tools?.call, JSON.stringify(caps));
  });

  await step('tools/list', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'wait_for_gate');
    assert.equal(tool?.execution?.taskSupport, 'optional');
  });

  // The SDK's own flow: create, poll tasks/get until terminal, then tasks/result. The
  // gate opens once the first poll has seen the task working.
  await step('task: working -> completed', async () => {
    const statuses = [];
    let created;
    let result;
    const stream = client.experimental.tasks.callToolStream(waitFor(gates.first), CallToolResultSchema, {
      task: { ttl: 60000 },
    });
    for await (const message of stream) {
      if (message.type === 'taskCreated') {
        created = message.task;
        assert.equal(created.status, 'working');
        assert.equal(created.ttl, 60000);
        assert.equal(created.pollInterval, 100);
        assert.ok(created.taskId && created.createdAt && created.lastUpdatedAt);
      } else if (message.type === 'taskStatus') {
        assert.equal(message.task.taskId, created.taskId);
        statuses.push(message.task.status);
        if (statuses.length === 1) {
          assert.equal(message.task.status, 'working');
          const opened = await client.callTool({ name: 'open_gate', arguments: { gate: gates.first } });
          assert.equal(text(opened), `opened ${gates.first}`);
        }
      } else if (message.type === 'result') {
        result = message.result;
      } else {
        throw message.error;
      }
    }
    assert.equal(statuses.at(-1), 'completed', JSON.stringify(statuses));
    assert.ok(statuses.slice(0, -1).every((s) => s === 'working'), JSON.stringify(statuses));
    assert.equal(text(result), `gate ${gates.first} opened`);
    assert.notEqual(result.isError, true);
    assert.equal(relatedTask(result), created.taskId);
    await notified(created.taskId, 'completed');
    ids.first = created.taskId;
  });

  // tasks/result asked while the task works waits for its result.
  await step('tasks/result waits', async () => {
    const { task } = await client.request(
      { method: 'tools/call', params: waitFor(gates.second) },
      CreateTaskResultSchema,
      { task: { ttl: 60000 } },
    );
    assert.equal(task.status, 'working');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'working');
    const pending = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await client.callTool({ name: 'open_gate', arguments: { gate: gates.second } });
    const result = await pending;
    assert.equal(text(result), `gate ${gates.second} opened`);
    assert.equal(relatedTask(result), task.taskId);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
    ids.second = task.taskId;
  });

  await step('tasks/cancel', async () => {
    const { task } = await client.request(
      { method: 'tools/call', params: waitFor(gates.never) },
      CreateTaskResultSchema,
      { task: {} },
    );
    assert.equal(task.status, 'working');
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.taskId, task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    await assert.rejects(client.experimental.tasks.cancelTask(task.taskId), invalidParams);
    await notified(task.taskId, 'cancelled');
    ids.cancelled = task.taskId;
  });

  // The side channel: the task asks for input, is input_required (as the server
  // notifies) while its request waits, and tasks/result carries the request, tagged
  // with the task, to the elicitation handler, then returns the result.
  await step('side channel', async () => {
    const before = asked.elicitation.length;
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'side_channel_task', arguments: { message: 'Who are you?' } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    await notified(task.taskId, 'input_required');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'input_required');
    assert.equal(asked.elicitation.length, before, 'nothing asked before tasks/result');
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(
      text(result),
      'User response: action=accept, content={"email":"ada@example.com","username":"ada"}',
    );
    assert.equal(relatedTask(result), task.taskId);
    const elicitation = asked.elicitation.at(-1);
    assert.equal(asked.elicitation.length, before + 1);
    assert.equal(elicitation.message, 'Who are you?');
    assert.equal(elicitation._meta?.[RELATED_TASK_META_KEY]?.taskId, task.taskId);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
    ids.asked = task.taskId;
  });

  await step('tasks/list', async () => {
    const listed = new Map();
    let cursor;
    do {
      const page = await client.experimental.tasks.listTasks(cursor);
      for (const task of page.tasks) listed.set(task.taskId, task.status);
      cursor = page.nextCursor;
    } while (cursor);
    assert.equal(listed.get(ids.first), 'completed');
    assert.equal(listed.get(ids.second), 'completed');
    assert.equal(listed.get(ids.cancelled), 'cancelled');
    assert.equal(listed.get(ids.asked), 'completed');
  });

  await step('unknown task', async () => {
    await assert.rejects(client.experimental.tasks.getTask('no-such-task'), invalidParams);
  });

  await step('plain call of a task tool', async () => {
    const result = await client.callTool(waitFor(gates.first));
    assert.equal(text(result), `gate ${gates.first} opened`);
  });
}

await conformanceSteps(client, step, {
  asked,
  logs,
  callToolWithProgress: (params, onprogress) => client.callTool(params, undefined, { onprogress }),
  callToolLoggingInfo: async (params) => {
    await client.setLoggingLevel('info');
    return client.callTool(params);
  },
});

await client.close();
console.log(`ts-client (${mode}): ${steps.length} steps passed: ${steps.join(', ')}`);
