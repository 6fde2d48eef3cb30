// A server built with the TypeScript SDK v2 (@modelcontextprotocol/server, pinned in
// package-lock.json), for modelctx's `conformance-client --interop` to drive.
// `cargo xtask interop` copies this file next to the installed node_modules and runs:
//
//   node ts2-server.mjs http <port>   streamable HTTP at http://127.0.0.1:<port>/mcp
//   node ts2-server.mjs stdio         stdio
//
// Fixtures (server-fixtures.mjs, as ts-server.mjs has): tools `add` (progress and a log message),
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
import * as fixture from './server-fixtures.mjs';

const reportEra = (version) => console.error(`negotiated protocol version: ${version}`);

function buildServer() {
  const server = new Server(
    { name: 'ts-interop-server', version: '1.0.0' },
    { capabilities: { tools: {}, resources: {}, prompts: {}, completions: {}, logging: {} } },
  );
  server.oninitialized = () => reportEra(server.getNegotiatedProtocolVersion());
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

  server.setRequestHandler('tools/list', async () => ({ tools: fixture.TOOLS }));
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
        return fixture.text(String(args.a + args.b));
      }
      case 'ask_llm': {
        const { answer, pending } = await ask(ctx, 'llm', 'sampling/createMessage', fixture.askLlmParams(args));
        if (pending) return pending;
        return fixture.askLlmResult(answer);
      }
      case 'ask_user': {
        const { answer, pending } = await ask(ctx, 'user', 'elicitation/create', fixture.askUserParams(args));
        if (pending) return pending;
        return fixture.elicitationResult(answer);
      }
      default:
        return fixture.unknownTool(request);
    }
  });
  server.setRequestHandler('resources/list', fixture.listResources);
  server.setRequestHandler('resources/read', fixture.readResource);
  server.setRequestHandler('prompts/list', fixture.listPrompts);
  server.setRequestHandler('prompts/get', fixture.getPrompt);
  server.setRequestHandler('completion/complete', fixture.complete);
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
