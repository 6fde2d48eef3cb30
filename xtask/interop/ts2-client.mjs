// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package-lock.json)
// driving modelctx's `conformance-server` example. `cargo xtask interop` copies this file
// next to the installed node_modules and runs it over each transport:
//
//   node ts2-client.mjs [--era ERA] http <url>            streamable HTTP
//   node ts2-client.mjs sse <url>             the legacy HTTP+SSE transport (2024-11-05,
//     `SSEClientTransport`; the URL of the event stream), the handshake era only
//   node ts2-client.mjs [--era ERA] stdio <server binary> [args...]  stdio (the binary is
//     run with the given args, --stdio when there are none)
//
// `--era` picks the client's `versionNegotiation` mode:
//
//   (absent)     the SDK's default, which is `'legacy'`: the `initialize` handshake, no probe
//   2025-11-25   `{ mode: 'legacy' }` explicitly
//   2026-07-28   `{ mode: { pin: '2026-07-28' } }`: `server/discover` must offer 2026-07-28,
//                then every request carries the per-request `_meta` envelope; no fallback
//
// Once connected it prints `negotiated protocol version: <version>` to stdout. Every step
// asserts on the result; the exit status is non-zero on the first mismatch.
import assert from 'node:assert/strict';
import {
  Client,
  LOG_LEVEL_META_KEY,
  SSEClientTransport,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const USAGE =
  'usage: ts2-client.mjs [--era 2025-11-25|2026-07-28] (http <url> | sse <url> | stdio <server binary>)';
const NEGOTIATION = {
  default: undefined,
  '2025-11-25': { mode: 'legacy' },
  '2026-07-28': { mode: { pin: '2026-07-28' } },
};

let args = process.argv.slice(2);
let era = 'default';
if (args[0] === '--era') {
  era = args[1];
  if (!(era in NEGOTIATION) || era === 'default') {
    console.error(`ts2-client.mjs: unknown era ${JSON.stringify(era)}; ${USAGE}`);
    process.exit(2);
  }
  args = args.slice(2);
}
const [mode, target, ...extra] = args;
if (args.length < 2 || !['http', 'sse', 'stdio'].includes(mode) || (mode !== 'stdio' && extra.length)) {
  console.error(USAGE);
  process.exit(2);
}
const label = era === 'default' ? mode : `${mode}, era ${era}`;
const fail = (e) => {
  console.error(e);
  const detail = e?.code !== undefined ? ` (code ${e.code}${e.data !== undefined ? `, data ${JSON.stringify(e.data)}` : ''})` : '';
  console.error(`ts2-client (${label}): FAILED: ${e?.message ?? e}${detail}`);
  process.exit(1);
};
process.on('unhandledRejection', fail);

const client = new Client(
  { name: 'ts2-interop-client', version: '1.0.0' },
  {
    capabilities: { sampling: {}, elicitation: { form: {} } },
    ...(NEGOTIATION[era] && { versionNegotiation: NEGOTIATION[era] }),
  },
);

// Answers to the server's own requests (pushed on the handshake era, embedded in an
// `input_required` result on 2026-07-28), recorded so the test can check they arrived.
const asked = { sampling: [], elicitation: [] };
client.setRequestHandler('sampling/createMessage', async (request) => {
  asked.sampling.push(request.params);
  const text = request.params.messages[0]?.content?.text;
  return {
    role: 'assistant',
    content: { type: 'text', text: `echo: ${text}` },
    model: 'ts2-test-model',
  };
});
client.setRequestHandler('elicitation/create', async (request) => {
  asked.elicitation.push(request.params);
  return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
});
const logs = [];
client.setNotificationHandler('notifications/message', (n) => {
  logs.push(n.params);
});

const transport =
  mode === 'http'
    ? new StreamableHTTPClientTransport(new URL(target))
    : mode === 'sse'
    ? new SSEClientTransport(new URL(target))
    : new StdioClientTransport({
        command: target,
        args: extra.length ? extra : ['--stdio'],
        stderr: 'inherit',
      });

const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

try {
  await client.connect(transport);
} catch (e) {
  fail(e);
}
const version = client.getNegotiatedProtocolVersion();
console.log(`negotiated protocol version: ${version}`);
const modern = client.getProtocolEra() === 'modern';
if (era !== 'default' && version !== era) {
  fail(new Error(`asked for ${era}, negotiated ${version}`));
}
const steps = [];
const step = async (name, f) => {
  try {
    await f();
  } catch (e) {
    fail(e);
  }
  steps.push(name);
};

await step(modern ? 'server/discover' : 'initialize', async () => {
  assert.equal(client.getServerVersion()?.name, 'modelctx-conformance-server');
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
  const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, {
    onprogress: (p) => progress.push([p.progress, p.total]),
  });
  assert.equal(text(result), 'Progress completed');
  // The server sends 0, 50 and 100 of 100 before the result. The TypeScript client (v1, and
  // v2 is the same on this point)
  // runs notification handlers a microtask later than it settles responses, so when the
  // last notification and the result arrive in one read (stdio batches them) it drops
  // that notification: expect the first two, in order, and the third only if it came.
  const expected = [[0, 100], [50, 100], [100, 100]];
  assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
  assert.deepEqual(progress, expected.slice(0, progress.length));
});

await step('logging', async () => {
  // Handshake era: `logging/setLevel`. 2026-07-28: the per-request log-level opt-in.
  if (modern) {
    await client.callTool({ name: 'test_tool_with_logging', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'info' } });
  } else {
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  }
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
console.log(`ts2-client (${label}): ${steps.length} steps passed: ${steps.join(', ')}`);
