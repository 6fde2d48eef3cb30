// The TypeScript SDK v2 (@modelcontextprotocol/server, pinned in package-lock.json) side
// of the cross-SDK benchmark (`cargo xtask bench --sdks`): the `echo` tool every bench
// server offers, on the SDK's low-level `Server`, as the Rust bench servers write theirs.
//
//   node bench-ts2-server.mjs stdio          stdio
//   node bench-ts2-server.mjs http stateful  stateful streamable HTTP (the handshake era)
//                                            at /mcp on an ephemeral loopback port,
//                                            printed as "listening ADDR" on stdout; ends
//                                            when stdin closes
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { ECHO_TOOL, echo, exitWhenStdinCloses } from './bench-echo.mjs';
import { serveMcp, sessionful } from './ts2-http.mjs';

function buildServer() {
  const server = new Server({ name: 'bench-typescript-v2', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', async () => ({ tools: [ECHO_TOOL] }));
  server.setRequestHandler('tools/call', async (request) => echo(request.params));
  return server;
}

const [mode, variant] = process.argv.slice(2);
if (mode === 'stdio') {
  await buildServer().connect(new StdioServerTransport());
} else if (mode === 'http' && variant === 'stateful') {
  serveMcp('bench-ts2-server', 0, sessionful(buildServer), (port) => {
    console.log(`listening 127.0.0.1:${port}`);
  });
  exitWhenStdinCloses();
} else {
  console.error('usage: bench-ts2-server.mjs stdio | http stateful');
  process.exit(2);
}
