// What the TypeScript SDK clients (ts-client.mjs for v1, ts2-client.mjs for v2) share when
// they drive modelctx's `conformance-server` example: the transport named on the command
// line, the answers to the server's own requests, and the steps both run, each asserting
// on the result. Each script passes its SDK's classes and calls where the versions differ.
// ts2-skills-client.mjs connects and reports through it too. Copied next to them.
import assert from 'node:assert/strict';

// The text blocks of a tool result, joined.
export const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

// The client transport of `mode` (`http`, `sse` or `stdio`) to `target`: a URL, or the
// server binary run with `extra` (--stdio when there are none).
export function clientTransport(mode, target, extra, sdk) {
  const { StreamableHTTPClientTransport, SSEClientTransport, StdioClientTransport } = sdk;
  return mode === 'http'
    ? new StreamableHTTPClientTransport(new URL(target))
    : mode === 'sse'
    ? new SSEClientTransport(new URL(target))
    : new StdioClientTransport({
        command: target,
        args: extra.length ? extra : ['--stdio'],
        stderr: 'inherit',
      });
}

// Connects `client` over `transport` (a failure goes to `fail`) and prints the protocol
// version negotiated, the line `cargo xtask interop` reads each leg's era from; returns it.
export async function connectAndReport(client, transport, fail) {
  try {
    await client.connect(transport);
  } catch (e) {
    fail(e);
  }
  const version = client.getNegotiatedProtocolVersion();
  console.log(`negotiated protocol version: ${version}`);
  return version;
}

// Answers the server's sampling (an echo by `model`) and elicitation (a fixed user)
// requests and collects its log messages; `on` names the request and notification types
// as the SDK's handler registration takes them. Returns what was asked and logged, so the
// steps can check that it arrived.
export function answerServerRequests(client, on, model) {
  const asked = { sampling: [], elicitation: [] };
  client.setRequestHandler(on.sampling, async (request) => {
    asked.sampling.push(request.params);
    const text = request.params.messages[0]?.content?.text;
    return {
      role: 'assistant',
      content: { type: 'text', text: `echo: ${text}` },
      model,
    };
  });
  client.setRequestHandler(on.elicitation, async (request) => {
    asked.elicitation.push(request.params);
    return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
  });
  const logs = [];
  client.setNotificationHandler(on.logging, (n) => {
    logs.push(n.params);
  });
  return { asked, logs };
}

// The server is `conformance-server`, with every capability the steps use.
export function assertConformanceServer(client) {
  assert.equal(client.getServerVersion()?.name, 'modelctx-conformance-server');
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools && caps.resources && caps.prompts && caps.completions && caps.logging);
}

// The steps both clients run, through `step(name, f)`, after the connection:
// `callToolWithProgress(params, onprogress)` and `callToolLoggingInfo(params)` are the
// SDK's calls for a tool call with progress and one with info logs asked for.
export async function conformanceSteps(client, step, { asked, logs, callToolWithProgress, callToolLoggingInfo }) {
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
    const result = await callToolWithProgress({ name: 'test_tool_with_progress', arguments: {} }, (p) =>
      progress.push([p.progress, p.total]),
    );
    assert.equal(text(result), 'Progress completed');
    // The server sends 0, 50 and 100 of 100 before the result. The TypeScript client (v1,
    // and v2 is the same on this point) runs notification handlers a microtask later than
    // it settles responses, so when the last notification and the result arrive in one
    // read (stdio batches them) it drops that notification: expect the first two, in
    // order, and the third only if it came.
    const expected = [[0, 100], [50, 100], [100, 100]];
    assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
    assert.deepEqual(progress, expected.slice(0, progress.length));
  });

  await step('logging', async () => {
    await callToolLoggingInfo({ name: 'test_tool_with_logging', arguments: {} });
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
}
