// HTTP plumbing of the TypeScript SDK v1 scripts (ts-server.mjs, bench-ts-server.mjs):
// stateful streamable HTTP on /mcp, one transport and server per session. Copied next to
// them.
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

// A `node:http` request handler: /mcp with one transport and server (`buildServer()`) per
// session, found by its `Mcp-Session-Id` (an unknown id is 404); anything else 404.
export function sessionful(buildServer) {
  const sessions = new Map();
  return async (req, res) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers['mcp-session-id'];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id) {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await buildServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  };
}
