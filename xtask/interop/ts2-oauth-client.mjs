// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package-lock.json)
// authorizing with OAuth against modelctx's `oauth-server` example (the resource server
// in front of an MCP server, and the bundled authorization server), then calling a tool.
//
//   node ts2-oauth-client.mjs <MCP URL> <user> <password>
//
// As `ts-oauth-client.mjs` does for v1: the SDK discovers the protected-resource and
// authorization-server metadata, registers dynamically and sends the user to the
// authorization URL; this script plays the user at the consent page (GET the form, POST
// the login and approval, read the redirect), checks `state`, hands the redirect's
// parameters to the SDK (v2's `finishAuth(URLSearchParams)`, which checks `iss` itself
// against the recorded issuer, RFC 9207) and connects again. The `whoami` tool must see
// the user. Exit status non-zero on the first mismatch.
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

const [url, user, password] = process.argv.slice(2);
if (!url || !user || password === undefined) {
  console.error('usage: ts2-oauth-client.mjs <MCP URL> <user> <password>');
  process.exit(2);
}

const REDIRECT = 'http://127.0.0.1:9/callback';

class Provider {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
    this.discovery = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: 'ts2-oauth-interop',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(authorizationUrl) {
    this.authorizationUrl = authorizationUrl;
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
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

/// The user at the consent page: the parameters of the redirect back to the client.
async function consent(authorizationUrl) {
  const page = await fetch(authorizationUrl);
  assert.equal(page.status, 200, 'the consent page');
  const html = await page.text();
  const txn = html.match(/name="txn" value="([^"]*)"/)?.[1];
  assert.ok(txn, 'the consent form');
  const answer = await fetch(new URL(authorizationUrl.pathname, authorizationUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ txn, username: user, password, decision: 'approve' }),
    redirect: 'manual',
  });
  assert.equal(answer.status, 302, 'approval redirects back');
  const back = new URL(answer.headers.get('location'));
  assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
  assert.equal(back.searchParams.get('state'), authorizationUrl.searchParams.get('state'));
  assert.equal(back.searchParams.get('iss'), authorizationUrl.origin);
  assert.ok(back.searchParams.get('code'), 'a code');
  return back.searchParams;
}

const provider = new Provider();
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
let client = new Client({ name: 'ts2-oauth-interop', version: '1.0.0' });
let refused = false;
try {
  await client.connect(transport);
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  refused = true;
}
assert.ok(refused, 'the first connection is challenged');
assert.ok(provider.authorizationUrl, 'the SDK asked for authorization');
assert.equal(provider.authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
assert.equal(provider.authorizationUrl.searchParams.get('resource'), url);
await transport.finishAuth(await consent(provider.authorizationUrl));

transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
client = new Client({ name: 'ts2-oauth-interop', version: '1.0.0' });
await client.connect(transport);
console.log(`negotiated protocol version: ${transport.protocolVersion ?? 'unknown'}`);
const result = await client.callTool({ name: 'whoami', arguments: {} });
assert.ok(result.content[0].text.startsWith(`${user} `), JSON.stringify(result));
await client.close();
console.log('ts2-oauth-client: ok');
