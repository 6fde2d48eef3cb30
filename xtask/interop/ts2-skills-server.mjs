// A skills server (SEP-2640) built with the TypeScript SDK v2 (@modelcontextprotocol/server
// and its `ext/skills` catalog, pinned in package-lock.json), for modelctx's
// `conformance-client --interop --skills DIR` to check. `cargo xtask interop` copies this
// file next to the installed node_modules and runs:
//
//   node ts2-skills-server.mjs DIR stdio         stdio
//   node ts2-skills-server.mjs DIR http <port>   streamable HTTP at http://127.0.0.1:<port>/mcp
//
// It serves every skill below DIR with `loadSkills` (strict: a skill the SDK would skip
// fails the start instead), `resources/directory/read` included. Over HTTP both eras are
// served by the SDK's `createMcpHandler`: 2026-07-28 requests as they come, the
// `initialize` handshake era statelessly (`legacy: 'stateless'`); the skills methods need
// no server-to-client request, so no session is kept.
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';
import { serveMcp } from './ts2-http.mjs';

const [dir, mode, port] = process.argv.slice(2);
if (!dir || !(mode === 'stdio' || (mode === 'http' && port))) {
  console.error('usage: ts2-skills-server.mjs DIR (stdio | http <port>)');
  process.exit(2);
}
const catalog = await loadSkills(dir, { strict: true, onWarning: (w) => console.error(`ts2-skills-server: ${w.path}: ${w.message}`) });
console.error(`ts2-skills-server: serving ${catalog.entries.length} skills from ${dir}`);
const build = () => {
  const mcp = new McpServer({ name: 'ts2-skills-server', version: '1.0.0' });
  catalog.attach(mcp);
  return mcp;
};

if (mode === 'stdio') {
  await build().connect(new StdioServerTransport());
} else {
  const handler = createMcpHandler(build, {
    legacy: 'stateless',
    onerror: (e) => console.error(`ts2-skills-server: ${e.message}`),
  });
  serveMcp('ts2-skills-server', port, (request, parsedBody) => handler.fetch(request, { parsedBody }), () => {
    console.error(`ts2-skills-server: listening on http://127.0.0.1:${port}/mcp`);
  });
}
