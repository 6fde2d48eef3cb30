// The TypeScript SDK v1 (@modelcontextprotocol/sdk, pinned in package-lock.json) side of
// the cross-SDK benchmark (`cargo xtask bench --sdks`): the `echo` tool every bench server
// offers, on the SDK's low-level `Server`, as the Rust bench servers write theirs.
//
//   node bench-ts-server.mjs stdio          stdio
//   node bench-ts-server.mjs http stateful  stateful streamable HTTP at /mcp on an
//                                           ephemeral loopback port, printed as
//                                           "listening ADDR" on stdout; ends when stdin
//                                           closes
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ECHO_TOOL, echo, exitWhenStdinCloses } from './bench-echo.mjs';
import { sessionful } from './ts-http.mjs';

function buildServer() {
  const server = new Server({ name: 'bench-typescript', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [ECHO_TOOL] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => echo(request.params));
  return server;
}

const [mode, variant] = process.argv.slice(2);
if (mode === 'stdio') {
  await buildServer().connect(new StdioServerTransport());
} else if (mode === 'http' && variant === 'stateful') {
  const httpServer = http.createServer(sessionful(buildServer));
  httpServer.listen(0, '127.0.0.1', () => {
    console.log(`listening 127.0.0.1:${httpServer.address().port}`);
  });
  exitWhenStdinCloses();
} else {
  console.error('usage: bench-ts-server.mjs stdio | http stateful');
  process.exit(2);
}
