// The TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in package-lock.json)
// driving modelctx's `conformance-server` example. `cargo xtask interop` copies this file
// next to the installed node_modules and runs it twice:
//
//   node ts-client.mjs http <url>            streamable HTTP
//   node ts-client.mjs stdio <server binary> [args...]  stdio (the binary is run with the
//     given args, --stdio when there are none)
//
// Every step asserts on the result; the exit status is non-zero on the first mismatch.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [mode, target, ...extra] = process.argv.slice(2);
if (!['http', 'stdio'].includes(mode) || !target) {
  console.error('usage: ts-client.mjs http <url> | stdio <server binary> [args...]');
  process.exit(2);
}

const client = new Client(
  { name: 'ts-interop-client', version: '1.0.0' },
  { capabilities: { sampling: {}, elicitation: { form: {} } } },
);

// Answers to the server's own requests, recorded so the test can check they arrived.
const asked = { sampling: [], elicitation: [] };
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.sampling.push(request.params);
  const text = request.params.messages[0]?.content?.text;
  return {
    role: 'assistant',
    content: { type: 'text', text: `echo: ${text}` },
    model: 'ts-test-model',
  };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.elicitation.push(request.params);
  return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
});
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  logs.push(n.params);
});

const transport =
  mode === 'http'
    ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({
        command: target,
        args: extra.length ? extra : ['--stdio'],
        stderr: 'inherit',
      });

const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

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

await step('initialize', async () => {
  assert.equal(client.getServerVersion().name, 'modelctx-conformance-server');
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools && caps.resources && caps.prompts && caps.completions && caps.logging);
});

await step('tools/list', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ['test_simple_text', 'test_tool_with_progress', 'test_sampling', 'test_elicitation']) {
    assert.ok(names.includes(name), `tool ${name} listed`);
  }
  const sampling = tools.find((t) => t.name === 'test_sampling');
  assert.deepEqual(sampling.inputSchema.required, ['prompt']);
});

await step('tools/call', async () => {
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  assert.equal(text(result), 'This is a simple text response for testing.');
  const failed = await client.callTool({ name: 'test_error_handling', arguments: {} });
  assert.equal(failed.isError, true);
});

await step('progress', async () => {
  const progress = [];
  const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
    onprogress: (p) => progress.push([p.progress, p.total]),
  });
  assert.equal(text(result), 'Progress completed');
  // The server sends 0, 50 and 100 of 100 before the result. The TypeScript client
  // runs notification handlers a microtask later than it settles responses, so when the
  // last notification and the result arrive in one read (stdio batches them) it drops
  // that notification: expect the first two, in order, and the third only if it came.
  const expected = [[0, 100], [50, 100], [100, 100]];
  assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
  assert.deepEqual(progress, expected.slice(0, progress.length));
});

await step('logging', async () => {
  await client.setLoggingLevel('info');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  assert.deepEqual(
    logs.filter((l) => l.level === 'info').map((l) => l.data),
    ['Tool execution started', 'Tool processing data', 'Tool execution completed'],
  );
});

await step('resources', async () => {
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'test://static-text'));
  const read = await client.readResource({ uri: 'test://static-text' });
  assert.equal(read.contents[0].text, 'This is the content of the static text resource.');
  const templated = await client.readResource({ uri: 'test://template/42/data' });
  assert.deepEqual(JSON.parse(templated.contents[0].text), {
    id: '42',
    templateTest: true,
    data: 'Data for ID: 42',
  });
});

await step('prompts', async () => {
  const prompt = await client.getPrompt({
    name: 'test_prompt_with_arguments',
    arguments: { arg1: 'hello', arg2: 'world' },
  });
  assert.equal(prompt.messages[0].content.text, "Prompt with arguments: arg1='hello', arg2='world'");
});

await step('completion', async () => {
  const { completion } = await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'par' },
  });
  assert.deepEqual(completion.values, ['paris', 'park', 'party']);
});

await step('sampling', async () => {
  const result = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'ping?' } });
  assert.equal(text(result), 'LLM response: echo: ping?');
  assert.equal(asked.sampling.length, 1);
  assert.equal(asked.sampling[0].maxTokens, 100);
});

await step('elicitation', async () => {
  const result = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
  assert.equal(
    text(result),
    'User response: action=accept, content={"email":"ada@example.com","username":"ada"}',
  );
  assert.equal(asked.elicitation[0].message, 'Who are you?');
});

await client.close();
console.log(`ts-client (${mode}): ${steps.length} steps passed: ${steps.join(', ')}`);
