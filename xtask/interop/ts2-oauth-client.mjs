// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package-lock.json)
// authorizing with OAuth against modelctx's `oauth-server` example (the resource server
// in front of an MCP server, and the bundled authorization server), then calling a tool.
//
//   node ts2-oauth-client.mjs <MCP URL> <user> <password>
//
// As `ts-oauth-client.mjs` does for v1 (the flow of oauth-flow.mjs): the SDK discovers
// the protected-resource and authorization-server metadata, registers dynamically and
// sends the user to the authorization URL; this script plays the user at the consent page
// (GET the form, POST the login and approval, read the redirect), checks `state`, hands
// the redirect's parameters to the SDK (v2's `finishAuth(URLSearchParams)`, which checks
// `iss` itself against the recorded issuer, RFC 9207) and connects again. The `whoami`
// tool must see the user. Exit status non-zero on the first mismatch.
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { InMemoryProvider, authorizeAndCallWhoami } from './oauth-flow.mjs';

class Provider extends InMemoryProvider {
  constructor(clientName) {
    super(clientName);
    this.discovery = undefined;
  }
  // Kept beside the code verifier, so that the SDK can check that the callback comes
  // from the authorization server it discovered (SEP-2352).
  saveDiscoveryState(state) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

await authorizeAndCallWhoami({
  script: 'ts2-oauth-client',
  clientName: 'ts2-oauth-interop',
  Provider,
  // The parameters of the redirect back to the client.
  callback: (back) => {
    assert.ok(back.searchParams.get('code'), 'a code');
    return back.searchParams;
  },
  sdk: { Client, StreamableHTTPClientTransport, UnauthorizedError },
});
