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
import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

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
  // node:http <-> the handler's web-standard Request/Response.
  const httpServer = http.createServer(async (req, res) => {
    try {
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const body = Buffer.concat(chunks);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
      }
      const hasBody = !['GET', 'HEAD'].includes(req.method) && body.length > 0;
      let parsedBody;
      try {
        parsedBody = hasBody ? JSON.parse(body.toString('utf8')) : undefined;
      } catch {
        parsedBody = undefined;
      }
      const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
        method: req.method,
        headers,
        body: hasBody ? body : undefined,
      });
      const response = await handler.fetch(request, { parsedBody });
      const out = {};
      response.headers.forEach((value, name) => {
        out[name] = value;
      });
      res.writeHead(response.status, out);
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    } catch (e) {
      console.error(`ts2-skills-server: ${e.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  httpServer.listen(Number(port), '127.0.0.1', () => {
    console.error(`ts2-skills-server: listening on http://127.0.0.1:${port}/mcp`);
  });
}
