// The TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in package-lock.json)
// authorizing with OAuth against modelctx's `oauth-server` example (the resource server
// in front of an MCP server, and the bundled authorization server), then calling a tool.
//
//   node ts-oauth-client.mjs <MCP URL> <user> <password>
//
// The flow of oauth-flow.mjs: the SDK discovers the protected-resource and
// authorization-server metadata, registers dynamically and sends the user to the
// authorization URL; this script plays the user at the consent page (GET the form, POST
// the login and approval, read the redirect), hands the code to the SDK and connects
// again. It checks `state` and `iss` on the redirect, and that the `whoami` tool sees the
// user. Exit status non-zero on the first mismatch.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { authorizeAndCallWhoami } from './oauth-flow.mjs';

await authorizeAndCallWhoami({
  script: 'ts-oauth-client',
  clientName: 'ts-oauth-interop',
  // v1's `finishAuth` takes the code; the issuer of the redirect is checked here.
  callback: (back, authorizationUrl) => {
    assert.equal(back.searchParams.get('iss'), authorizationUrl.origin);
    return back.searchParams.get('code');
  },
  sdk: { Client, StreamableHTTPClientTransport, UnauthorizedError },
});
