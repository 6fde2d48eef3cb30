// A server built with the TypeScript SDK v2 (@modelcontextprotocol/server, pinned in
// package-lock.json), for modelctx's `conformance-client --interop` to drive.
// `cargo xtask interop` copies this file next to the installed node_modules and runs:
//
//   node ts2-server.mjs http <port>   streamable HTTP at http://127.0.0.1:<port>/mcp
//   node ts2-server.mjs stdio         stdio
//
// Fixtures (the same as ts-server.mjs): tools `add` (progress and a log message),
// `ask_llm` (sampling) and `ask_user` (form elicitation); resource `info://about`; prompt
// `greet` whose `name` completes.
//
// Both protocol eras are served. Over HTTP, 2025-era traffic (the `initialize` handshake)
// goes to a sessionful streamable HTTP transport, so the server can push sampling and
// elicitation requests mid-call; 2026-07-28 traffic (per-request `_meta` envelope) goes
// to the SDK's stateless `createMcpHandler`, where sampling and elicitation ride an
// `input_required` result instead. Each session's era (each stateless request's, on
// 2026-07-28) is reported on stderr as `negotiated protocol version: <version>`.
import {
  PROTOCOL_VERSION_META_KEY,
  Server,
  createMcpHandler,
  inputRequired,
  isLegacyRequest,
} from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { serveMcp, sessionful } from './ts2-http.mjs';

const NAMES = ['Alan', 'Alice', 'Bob'];
const reportEra = (version) => console.error(`negotiated protocol version: ${version}`);

function buildServer() {
  const server = new Server(
    { name: 'ts-interop-server', version: '1.0.0' },
    { capabilities: { tools: {}, resources: {}, prompts: {}, completions: {}, logging: {} } },
  );
  server.oninitialized = () => reportEra(server.getNegotiatedProtocolVersion());
  const object = (properties, required) => ({ type: 'object', properties, required });
  const text = (t) => ({ content: [{ type: 'text', text: t }] });
  // The 2026-07-28 era carries its version in every request's envelope.
  const modernVersion = (ctx) => ctx.mcpReq.envelope?.[PROTOCOL_VERSION_META_KEY];

  // Asks the client for input: a pushed request on the handshake era; on 2026-07-28 an
  // `input_required` result on the first round, the client's answer on the retry.
  const ask = async (ctx, key, method, params) => {
    if (!modernVersion(ctx)) {
      return {
        answer:
          method === 'sampling/createMessage'
            ? await ctx.mcpReq.requestSampling(params)
            : await ctx.mcpReq.elicitInput(params),
      };
    }
    const answer = ctx.mcpReq.inputResponses?.[key];
    if (answer !== undefined) return { answer };
    const request =
      method === 'sampling/createMessage' ? inputRequired.createMessage(params) : inputRequired.elicit(params);
    return { pending: inputRequired({ inputRequests: { [key]: request } }) };
  };

  server.setRequestHandler('tools/list', async () => ({
    tools: [
      {
        name: 'add',
        description: 'Adds two numbers, reporting progress',
        inputSchema: object({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
      },
      {
        name: 'ask_llm',
        description: "Asks the client's LLM",
        inputSchema: object({ question: { type: 'string' } }, ['question']),
      },
      {
        name: 'ask_user',
        description: 'Asks the user for a name and an age',
        inputSchema: object({ message: { type: 'string' } }, ['message']),
      },
    ],
  }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const version = modernVersion(ctx);
    if (version) reportEra(version);
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'add': {
        const token = request.params._meta?.progressToken;
        await ctx.mcpReq.log('info', `adding ${args.a} and ${args.b}`, 'add');
        if (token !== undefined) {
          for (const progress of [1, 2]) {
            await ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken: token, progress, total: 2 },
            });
          }
        }
        return text(String(args.a + args.b));
      }
      case 'ask_llm': {
        const { answer, pending } = await ask(ctx, 'llm', 'sampling/createMessage', {
          messages: [{ role: 'user', content: { type: 'text', text: args.question } }],
          maxTokens: 50,
        });
        if (pending) return pending;
        return text(`LLM said: ${answer.content.text} (model ${answer.model})`);
      }
      case 'ask_user': {
        const { answer, pending } = await ask(ctx, 'user', 'elicitation/create', {
          message: args.message,
          requestedSchema: object({ name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, ['name']),
        });
        if (pending) return pending;
        return text(`${answer.action}: ${JSON.stringify(answer.content ?? null)}`);
      }
      default:
        return { isError: true, ...text(`unknown tool ${request.params.name}`) };
    }
  });
  server.setRequestHandler('resources/list', async () => ({
    resources: [{ uri: 'info://about', name: 'about', mimeType: 'text/plain' }],
  }));
  server.setRequestHandler('resources/read', async (request) => {
    if (request.params.uri !== 'info://about') {
      throw new Error(`no resource ${request.params.uri}`);
    }
    return {
      contents: [{ uri: 'info://about', mimeType: 'text/plain', text: 'A TypeScript SDK server.' }],
    };
  });
  server.setRequestHandler('prompts/list', async () => ({
    prompts: [{ name: 'greet', description: 'Greets someone', arguments: [{ name: 'name', required: true }] }],
  }));
  server.setRequestHandler('prompts/get', async (request) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${request.params.arguments?.name}!` } }],
  }));
  server.setRequestHandler('completion/complete', async (request) => {
    const prefix = request.params.argument.value;
    const values = NAMES.filter((n) => n.startsWith(prefix));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

const [mode, port] = process.argv.slice(2);
if (mode === 'stdio') {
  await buildServer().connect(new StdioServerTransport());
} else if (mode === 'http' && port) {
  const modern = createMcpHandler(buildServer, {
    legacy: 'reject',
    onerror: (e) => console.error(`ts2-server: ${e.message}`),
  });
  const legacy = sessionful(buildServer);
  const handle = async (request, parsedBody) =>
    (await isLegacyRequest(request, parsedBody))
      ? legacy(request, parsedBody)
      : modern.fetch(request, { parsedBody });
  serveMcp('ts2-server', port, handle, () => {
    console.error(`ts2-server: listening on http://127.0.0.1:${port}/mcp`);
  });
} else {
  console.error('usage: ts2-server.mjs http <port> | stdio');
  process.exit(2);
}
