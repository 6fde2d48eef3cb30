// HTTP plumbing of the TypeScript SDK v2 scripts (ts2-server.mjs, ts2-skills-server.mjs,
// bench-ts2-server.mjs): node:http <-> the SDK's fetch-shaped handlers, the sessionful
// routing of the handshake era, and serving on /mcp. Copied next to them.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

export async function toWebRequest(req, port) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const hasBody = !['GET', 'HEAD'].includes(req.method) && body.length > 0;
  let parsedBody;
  if (hasBody) {
    try {
      parsedBody = JSON.parse(body.toString('utf8'));
    } catch {
      parsedBody = undefined;
    }
  }
  const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? body : undefined,
  });
  return { request, parsedBody };
}

export async function sendWebResponse(response, res) {
  const headers = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body) {
    for await (const chunk of response.body) res.write(chunk);
  }
  res.end();
}

// The handshake era with sessions: one transport and server (`buildServer()`) per session,
// found by its `Mcp-Session-Id`; an unknown id is 404.
export function sessionful(buildServer) {
  const sessions = new Map();
  return async (request, parsedBody) => {
    const id = request.headers.get('mcp-session-id');
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id) return new Response(null, { status: 404 });
      transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await buildServer().connect(transport);
    }
    return transport.handleRequest(request, { parsedBody });
  };
}

// Serves `handle(request, parsedBody)` (a web-standard Response) on /mcp at
// 127.0.0.1:`port` (0: an ephemeral one); `listening(port)` once bound. Errors are logged
// on stderr as `name: ...` and answered 500.
export function serveMcp(name, port, handle, listening) {
  let bound = Number(port);
  const httpServer = http.createServer(async (req, res) => {
    try {
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      const { request, parsedBody } = await toWebRequest(req, bound);
      await sendWebResponse(await handle(request, parsedBody), res);
    } catch (e) {
      console.error(`${name}: ${e.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  httpServer.listen(bound, '127.0.0.1', () => {
    bound = httpServer.address().port;
    listening(bound);
  });
}
